use super::*;

fn window(start_ms: u64, duration_ms: u64) -> Window {
    Window {
        nemesis: "pause-holder".to_string(),
        start_ms,
        duration_ms,
        targets: Vec::new(),
        cuts: Vec::new(),
        one_way: false,
    }
}

/// Twelve 2 s windows, 2.5 s apart, in a 30 s run with 5 clients.
fn start() -> Candidate {
    Candidate {
        windows: (0..12).map(|i| window(500 + 2500 * i, 2000)).collect(),
        clients: 5,
        time_limit_ms: 30_000,
    }
}

/// Fails when, for each of `culprits`, a window starting there (or up to `late_ms` after it)
/// lasts at least `min_ms`, with at least `min_clients` clients and a time limit of at least
/// `min_time_limit_ms`; stops after `calls_left` answers.
struct Made {
    culprits: Vec<u64>,
    late_ms: u64,
    min_ms: u64,
    min_clients: u32,
    min_time_limit_ms: u64,
    calls: u32,
    calls_left: u32,
    tried: Vec<Candidate>,
}

impl Made {
    fn new(culprits: &[u64]) -> Made {
        Made {
            culprits: culprits.to_vec(),
            late_ms: 0,
            min_ms: 1200,
            min_clients: 2,
            min_time_limit_ms: 0,
            calls: 0,
            calls_left: u32::MAX,
            tried: Vec::new(),
        }
    }
}

impl Oracle for Made {
    fn test(&mut self, _step: &str, c: &Candidate) -> Answer {
        if self.calls_left == 0 {
            return Answer::Stop;
        }
        self.calls_left -= 1;
        self.calls += 1;
        self.tried.push(c.clone());
        let culprits_there = self.culprits.iter().all(|start| {
            (c.windows.iter()).any(|w| {
                (*start..=start + self.late_ms).contains(&w.start_ms)
                    && w.duration_ms >= self.min_ms
            })
        });
        let fits = c
            .windows
            .iter()
            .all(|w| w.start_ms + w.duration_ms + 1000 <= c.time_limit_ms);
        let long_enough = c.time_limit_ms >= self.min_time_limit_ms;
        if culprits_there && c.clients >= self.min_clients && fits && long_enough {
            Answer::Fails
        } else {
            Answer::Passes
        }
    }
}

fn limits(violation_ms: Option<u64>) -> Limits {
    Limits {
        quiet_ms: 1000,
        violation_ms,
    }
}

#[test]
fn ddmin_finds_the_one_window_that_fails() {
    let mut oracle = Made::new(&[15_500]);
    let best = shrink(start(), &limits(None), &mut oracle);
    assert_eq!(best.windows.len(), 1, "{best:?}");
    assert_eq!(best.windows[0].start_ms, 15_500);
    // Bisected from 2000 ms toward the 1200 ms the made-up lock needs: within an eighth.
    assert!(
        (1200..=1250).contains(&best.windows[0].duration_ms),
        "{best:?}"
    );
    assert_eq!(best.clients, 2);
    // The fault ends at 16.75 s; a second of aftermath, the quiet second, rounded up.
    assert_eq!(best.time_limit_ms, 18_800);
    assert!(oracle.tried.contains(&best));
}

#[test]
fn windows_that_fail_only_together_are_both_kept() {
    let mut oracle = Made::new(&[3_000, 25_500]);
    let best = shrink(start(), &limits(None), &mut oracle);
    let starts: Vec<u64> = best.windows.iter().map(|w| w.start_ms).collect();
    assert_eq!(starts, [3_000, 25_500], "{best:?}");
}

#[test]
fn the_cut_after_the_violation_drops_later_faults_and_time_in_one_replay() {
    let mut oracle = Made::new(&[5_500]);
    oracle.calls_left = 1;
    let best = shrink(start(), &limits(Some(6_800)), &mut oracle);
    let starts: Vec<u64> = best.windows.iter().map(|w| w.start_ms).collect();
    assert_eq!(starts, [500, 3_000, 5_500]);
    // The faults end at 7.5 s; one more second of aftermath and the quiet second.
    assert_eq!(best.time_limit_ms, 9_500);
    assert_eq!(oracle.calls, 1);
}

#[test]
fn a_stopped_search_keeps_the_best_it_had_seen_fail() {
    for calls in 0..12 {
        let mut oracle = Made::new(&[15_500]);
        oracle.calls_left = calls;
        let best = shrink(start(), &limits(None), &mut oracle);
        assert!(
            best == start() || oracle.tried.contains(&best),
            "after {calls} calls: {best:?}"
        );
        assert!(oracle.calls <= calls);
        assert!(best.windows.iter().any(|w| w.start_ms == 15_500));
    }
}

#[test]
fn fewer_clients_never_drop_a_client_a_window_aims_at() {
    let mut aimed = window(1000, 2000);
    aimed.nemesis = "kill-client".to_string();
    aimed.targets = vec!["c3".to_string()];
    let candidate = Candidate {
        windows: vec![aimed],
        clients: 5,
        time_limit_ms: 10_000,
    };
    let mut oracle = Made::new(&[1000]);
    let best = shrink(candidate, &limits(None), &mut oracle);
    assert_eq!(best.clients, 4);
    assert!(oracle.tried.iter().all(|c| c.clients >= 4));
}

#[test]
fn the_faults_start_later_within_the_room_the_time_limit_leaves() {
    // The made-up violation shows only in a run of 20 s or more, from a fault starting
    // between 15.5 s and 16.5 s.
    let mut oracle = Made::new(&[15_500]);
    oracle.late_ms = 1_000;
    oracle.min_time_limit_ms = 20_000;
    let best = shrink(start(), &limits(None), &mut oracle);
    assert_eq!(best.windows.len(), 1, "{best:?}");
    let window = &best.windows[0];
    assert!(
        (15_600..=16_500).contains(&window.start_ms),
        "not later, or too late: {best:?}"
    );
    // The time limit was not lengthened for it: the fault still ends before its aftermath
    // and the quiet second.
    assert!((20_000..=21_000).contains(&best.time_limit_ms), "{best:?}");
    assert!(window.start_ms + window.duration_ms + 2_000 <= best.time_limit_ms);
    assert!(oracle.tried.contains(&best));
    // The latest start the room allowed was tried first, and failed to show it.
    let later: Vec<u64> = (oracle.tried.iter())
        .filter(|c| c.windows.len() == 1 && c.windows[0].start_ms > 15_500)
        .map(|c| c.windows[0].start_ms)
        .collect();
    assert!(later[0] > 16_500, "{later:?}");
}

#[test]
fn no_room_after_the_faults_means_no_later_start_is_tried() {
    let mut oracle = Made::new(&[15_500]);
    oracle.min_ms = 1_300;
    let best = shrink(start(), &limits(None), &mut oracle);
    // The shortest time limit holds the fault exactly: nothing is left to move it by.
    assert_eq!(
        best.windows[0].start_ms + best.windows[0].duration_ms + 2_000,
        best.time_limit_ms,
        "{best:?}"
    );
    assert!(oracle
        .tried
        .iter()
        .all(|c| c.windows.iter().all(|w| w.start_ms % 2_500 == 500)));
}

#[test]
fn split_keeps_every_window_in_order() {
    let windows = start().windows;
    for parts in 1..=12 {
        let chunks = split(&windows, parts);
        assert_eq!(chunks.len(), parts);
        assert_eq!(chunks.concat(), windows);
    }
}
