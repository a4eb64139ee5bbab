//! `lockpick`: the command line. Exit codes follow Jepsen: 0 valid, 1 invalid, 2 unknown,
//! 254 bad arguments or environment, 255 the harness itself failed.

mod bench;
mod children;
mod clean;
mod cli;
mod client;
mod cluster;
mod compare;
mod config;
mod delay_proxy;
mod faketime;
mod firewall;
mod history_log;
mod nemesis;
mod report;
mod resource;
mod run;
mod run_prefix;
mod runtime;
mod schedule;
mod schedule_check;
mod service;
mod store;
mod summary;

use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Parser;

use crate::cli::{CheckArgs, Cli, Command};
use crate::config::{bad, BadInput, RunConfig};

const EXIT_BAD_INPUT: u8 = 254;
const EXIT_CRASH: u8 = 255;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(EXIT_BAD_INPUT)
            } else {
                ExitCode::SUCCESS // --help, --version
            };
        }
    };
    match std::panic::catch_unwind(|| dispatch(cli)) {
        Ok(Ok(code)) => ExitCode::from(code),
        Ok(Err(e)) if e.downcast_ref::<BadInput>().is_some() => {
            eprintln!("lockpick: {e}");
            ExitCode::from(EXIT_BAD_INPUT)
        }
        Ok(Err(e)) => {
            eprintln!("lockpick: error: {e:#}");
            ExitCode::from(EXIT_CRASH)
        }
        Err(_) => ExitCode::from(EXIT_CRASH),
    }
}

fn dispatch(cli: Cli) -> Result<u8> {
    match cli.command {
        Command::Compare(args) => {
            compare::compare(&args, interrupt_on_signals()?)?;
            Ok(0)
        }
        Command::Run(args) => {
            let config = RunConfig::from_args(&args, std::env::args().collect())?;
            let interrupt = interrupt_on_signals()?;
            let finished = run::run(&config, interrupt)?;
            print!("{}", summary::render(&finished.results));
            println!("  store: {}", finished.dir.display());
            let mut code = finished.results.valid.exit_code() as u8;
            for crash in &finished.crashed_clients {
                println!("  warning: {crash}");
            }
            if !finished.crashed_clients.is_empty() && code == 0 {
                // The lock was not exercised as configured: nothing found is not "valid".
                println!("  verdict downgraded to unknown: clients crashed");
                code = 2;
            }
            if finished.interrupted {
                println!("  interrupted: the history is partial");
                // A partial run proves a violation it found, but cannot vouch for validity.
                return Ok(if code == 0 { 2 } else { code });
            }
            Ok(code)
        }
        Command::Check(args) => check(&args),
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
            let (ops, results) = report::load(&args.run)?;
            report::write_run_reports(&args.run, &ops, &results)?;
            println!("{}", args.run.join(report::REPORT).display());
            Ok(0)
        }
        Command::Bench(args) => {
            match args.what {
                cli::BenchKind::Startup => bench::startup(&args)?,
            }
            Ok(0)
        }
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
    let path = if args.history.is_dir() {
        args.history.join(store::HISTORY)
    } else {
        args.history.clone()
    };
    let file = open_history(&path)?;
    let results = lockpick_checkers::check_reader(std::io::BufReader::new(file));
    if args.json {
        println!("{}", serde_json::to_string_pretty(&results)?);
    } else {
        print!("{}", summary::render(&results));
        if !results.incomplete.is_empty() {
            let shown: Vec<String> = results
                .incomplete
                .iter()
                .take(20)
                .map(|i| i.to_string())
                .collect();
            println!("  incomplete operations (indexes): {}", shown.join(", "));
        }
    }
    Ok(results.valid.exit_code() as u8)
}

fn open_history(path: &Path) -> Result<std::fs::File> {
    if !path.exists() {
        return Err(bad(format!("no history at {}", path.display())));
    }
    std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))
}
