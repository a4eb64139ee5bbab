//! `lockpick`: the command line. Exit codes follow Jepsen: 0 valid, 1 invalid, 2 unknown,
//! 254 bad arguments or environment, 255 the harness itself failed.

use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::Result;
use clap::Parser;

use lockpick::bad_input::{open_history, Links};
use lockpick::cli::{CheckArgs, Cli, Command};
use lockpick::config::{bad, BadInput, RunConfig};
use lockpick::report::summary;
use lockpick::report::summary_md::RunSummary;
use lockpick::text::stdout;
use lockpick::text::terminal::{field, neutral};
use lockpick::{
    bench, clean, client, compare, protocol_check, report, resource, run, say, shrink, store,
    sweep, tell,
};

const EXIT_BAD_INPUT: u8 = 254;
const EXIT_CRASH: u8 = 255;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if e.use_stderr() => {
            tell!("lockpick: {}", clap_error_line(&e));
            return ExitCode::from(EXIT_BAD_INPUT);
        }
        Err(e) => {
            let _ = e.print(); // --help, --version
            return ExitCode::SUCCESS;
        }
    };
    match std::panic::catch_unwind(|| dispatch(cli)) {
        Ok(Ok(code)) => ExitCode::from(code),
        Ok(Err(e)) if e.downcast_ref::<BadInput>().is_some() => {
            // One line, whatever the input it quotes holds (a folder named with a line break).
            tell!("lockpick: {}", field(&e.to_string()));
            ExitCode::from(EXIT_BAD_INPUT)
        }
        Ok(Err(e)) => {
            // Several lines where it quotes a server's last log lines.
            tell!("lockpick: error: {}", neutral(&format!("{e:#}")));
            ExitCode::from(EXIT_CRASH)
        }
        Err(_) => ExitCode::from(EXIT_CRASH),
    }
}

fn dispatch(cli: Cli) -> Result<u8> {
    match cli.command {
        Command::Compare(args) => compare::compare(&args, interrupt_on_signals()?),
        Command::Merge(args) => compare::merge(&args),
        Command::Sweep(args) => sweep::sweep(&args, interrupt_on_signals()?),
        Command::Run(args) => {
            let config = RunConfig::from_args(&args, std::env::args().collect())?;
            let interrupt = interrupt_on_signals()?;
            let finished = run::run(&config, interrupt, RunSummary::Published)?;
            stdout::print(&neutral(&summary::render(&finished.results)));
            let dir = finished.dir.display().to_string();
            say!("  store: {}", field(&dir));
            if finished.results.valid == lockpick_checkers::Validity::Invalid {
                say!(
                    "  smallest failing schedule: {}",
                    shrink::shrink_command(&finished.dir, &args)
                );
            }
            for crash in &finished.crashed_clients {
                say!("  warning: {crash}");
            }
            if finished.interrupted {
                say!("  interrupted: the history is partial");
            }
            if let Some(at) = finished
                .model
                .run_end
                .as_ref()
                .and_then(|e| e.decided_at_ns)
            {
                println!(
                    "  decided: the history proved a violation by {}, and the run ended there \
                     (--until decided)",
                    lockpick_checkers::story::seconds(at)
                );
            }
            if let Err(e) = finished.left_nothing_behind() {
                tell!("lockpick: error: {e:#}");
                return Ok(EXIT_CRASH);
            }
            // The verdict was decided once, before any output was written.
            Ok(finished.results.valid.exit_code() as u8)
        }
        Command::Check(args) => check(&args),
        Command::ProtocolCheck(args) => {
            let interrupt = interrupt_on_signals()?;
            protocol_check::protocol_check(&args, &interrupt)
        }
        Command::Shrink(args) => shrink::shrink(&args, interrupt_on_signals()?),
        Command::Clean(args) => {
            if !nix::unistd::geteuid().is_root() {
                return Err(bad("lockpick clean needs root: run it with sudo"));
            }
            clean::clean(&args)?;
            Ok(0)
        }
        Command::Report(args) => {
            if !args.run.join(store::HISTORY).exists() {
                return Err(bad(format!(
                    "no run at {} (no history.jsonl there)",
                    args.run.display()
                )));
            }
            let loaded = report::load(&args.run)?;
            report::write_run_reports(&args.run, &loaded)?;
            say!("{}", args.run.join(report::REPORT).display());
            Ok(0)
        }
        Command::Bench(args) => bench::bench(&args),
        Command::Client(args) => {
            client::run(&args)?;
            Ok(0)
        }
        Command::Resource(args) => {
            resource::serve(&args)?;
            Ok(0)
        }
    }
}

/// A flag that Ctrl-C, SIGTERM and SIGHUP set: a run ends its workload and tears down.
fn interrupt_on_signals() -> Result<Arc<AtomicBool>> {
    let interrupt = Arc::new(AtomicBool::new(false));
    for signal in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::flag::register(signal, Arc::clone(&interrupt))?;
    }
    Ok(interrupt)
}

fn check(args: &CheckArgs) -> Result<u8> {
    // A history the user names may be a link; one inside a run folder may not.
    let file = if args.history.is_dir() {
        open_history(&args.history.join(store::HISTORY), Links::Refuse)?
    } else {
        open_history(&args.history, Links::Follow)?
    };
    let results = lockpick_checkers::check_reader(std::io::BufReader::new(file));
    if args.json {
        say!("{}", serde_json::to_string_pretty(&results)?);
    } else {
        stdout::print(&neutral(&summary::render(&results)));
        if !results.incomplete.is_empty() {
            let shown: Vec<String> = results
                .incomplete
                .iter()
                .take(20)
                .map(|i| i.to_string())
                .collect();
            say!("  incomplete operations (indexes): {}", shown.join(", "));
        }
    }
    Ok(results.valid.exit_code() as u8)
}

/// Clap's error as one line: its message and hints, without the usage block.
fn clap_error_line(e: &clap::Error) -> String {
    if e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        return "a command is needed: run, compare, merge, check, shrink, clean, report or bench (see --help)"
            .to_string();
    }
    let text = e.render().to_string();
    let message: Vec<&str> = text
        .lines()
        .take_while(|line| !line.trim().is_empty())
        .map(str::trim)
        .collect();
    let message = message.join(" ");
    let message = message.strip_prefix("error: ").unwrap_or(&message);
    format!("{message} (see --help)")
}
