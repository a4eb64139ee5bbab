use super::*;

const FILE: &str = r#"
locks = ["redis", "etcd"]
nemeses = ["none", "pause-holder"]
fencing = ["on", "off"]
seed = 7

[knobs]
time-limit = "4s"
clients = 3

[[expect]]
nemeses = ["pause-holder"]
expect = "known unsafe"

[[expect]]
locks = ["etcd"]
nemeses = ["pause-holder"]
fencing = ["on"]
expect = ["no stale write accepted", "no grant under a live lease"]
why = "tokens and a fence"
"#;

#[test]
fn the_last_matching_group_decides_and_unmatched_cells_are_expected_valid() {
    let m = Matrix::parse(FILE).unwrap();
    assert_eq!(m.seed, Some(7));
    assert_eq!(m.knobs.run.time_limit.as_deref(), Some("4s"));
    assert_eq!(m.knobs.run.clients, Some(3));
    assert_eq!(
        m.expectation("redis", "none", "on"),
        CellExpectation::default_valid()
    );
    assert_eq!(
        m.expectation("redis", "pause-holder", "on").expectations,
        [Expectation::Invalid]
    );
    assert_eq!(
        m.expectation("etcd", "pause-holder", "off").expectations,
        [Expectation::Invalid]
    );
    let etcd = m.expectation("etcd", "pause-holder", "on");
    assert_eq!(
        etcd.expectations,
        [
            Expectation::NoStaleWriteAccepted,
            Expectation::NoGrantUnderLiveLease
        ]
    );
    assert_eq!(etcd.why.as_deref(), Some("tokens and a fence"));
}

#[test]
fn an_unknown_expectation_or_key_is_refused_with_its_line() {
    let typo = "[[expect]]\nexpect = \"mostly fine\"\n";
    let error = Matrix::parse(typo).unwrap_err();
    assert!(error.contains("line 2"), "{error}");
    assert!(error.contains("no stale write accepted"), "{error}");
    let unknown = "[knobs]\nworkk = \"1s\"\n";
    let error = Matrix::parse(unknown).unwrap_err();
    assert!(error.contains("workk"), "{error}");
}

#[test]
fn a_group_that_matches_no_cell_says_which_key_missed() {
    let text = "[[expect]]\nnemeses = [\"kill-node\"]\nexpect = \"invalid\"\n\
                [[expect]]\nlocks = [\"redis\"]\nfencing = [\"on\"]\nexpect = \"valid\"\n";
    let m = Matrix::parse(text).unwrap();
    let list = |items: &[&str]| items.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let (locks, nemeses) = (list(&["redis", "etcd"]), list(&["none", "pause-holder"]));
    let why = m.expect[0]
        .matches_none(&locks, &nemeses, &list(&["on"]))
        .unwrap();
    assert!(why.contains("none of its nemeses [\"kill-node\"]"), "{why}");
    assert_eq!(
        m.expect[0].label(0),
        "[[expect]] group 1 (nemeses = [\"kill-node\"], expect = \"invalid\")"
    );
    let why = m.expect[1]
        .matches_none(&locks, &nemeses, &list(&["off"]))
        .unwrap();
    assert!(why.contains("none of its fencing [\"on\"]"), "{why}");
    assert_eq!(
        m.expect[1].matches_none(&locks, &nemeses, &list(&["on", "off"])),
        None
    );
    // Each key has items in the matrix, but no cell has them together.
    let apart =
        Matrix::parse("[[expect]]\nlocks = [\"etcd\"]\nnemeses = [\"none\"]\nexpect = \"valid\"\n")
            .unwrap();
    let nemeses_for = list(&["pause-holder", "none"]);
    assert_eq!(
        apart.expect[0].matches_none(&locks, &nemeses_for, &list(&["on"])),
        None
    );
}

/// The matrix's repeat knobs (`at-least`), from the repeats' side.
mod with_repeats {
    use super::super::*;

    const FILE: &str = r#"
locks = ["redis", "etcd"]
nemeses = ["none", "pause-holder"]
fencing = ["on", "off"]
seed = 7

[knobs]
time-limit = "4s"
clients = 3

[[expect]]
nemeses = ["pause-holder"]
expect = "known unsafe"

[[expect]]
locks = ["etcd"]
nemeses = ["pause-holder"]
fencing = ["on"]
expect = ["no stale write accepted", "no grant under a live lease"]
why = "tokens and a fence"

[[expect]]
locks = ["redis"]
nemeses = ["pause-holder"]
fencing = ["off"]
expect = "invalid"
at-least = 2
"#;

    #[test]
    fn the_last_matching_group_decides_and_unmatched_cells_are_expected_valid() {
        let m = Matrix::parse(FILE).unwrap();
        assert_eq!(m.seed, Some(7));
        assert_eq!(m.knobs.run.time_limit.as_deref(), Some("4s"));
        assert_eq!(m.knobs.run.clients, Some(3));
        assert_eq!(
            m.expectation("redis", "none", "on"),
            CellExpectation::default_valid()
        );
        assert_eq!(
            m.expectation("redis", "pause-holder", "on").expectations,
            [Expectation::Invalid]
        );
        assert_eq!(
            m.expectation("etcd", "pause-holder", "off").expectations,
            [Expectation::Invalid]
        );
        let etcd = m.expectation("etcd", "pause-holder", "on");
        assert_eq!(
            etcd.expectations,
            [
                Expectation::NoStaleWriteAccepted,
                Expectation::NoGrantUnderLiveLease
            ]
        );
        assert_eq!(etcd.why.as_deref(), Some("tokens and a fence"));
        let some = m.expectation("redis", "pause-holder", "off");
        assert_eq!(some.at_least, Some(2));
        assert_eq!(some.words(), "invalid in at least 2");
    }

    #[test]
    fn an_unknown_expectation_or_key_is_refused_with_its_line() {
        let typo = "[[expect]]\nexpect = \"mostly fine\"\n";
        let error = Matrix::parse(typo).unwrap_err();
        assert!(error.contains("line 2"), "{error}");
        assert!(error.contains("no stale write accepted"), "{error}");
        let unknown = "[knobs]\nworkk = \"1s\"\n";
        let error = Matrix::parse(unknown).unwrap_err();
        assert!(error.contains("workk"), "{error}");
    }
}

#[test]
fn a_lock_is_a_name_or_a_table_that_gives_an_exec_lock_its_short_name() {
    let m = Matrix::parse(
        "locks = [\"redis\", { lock = \"exec:redis:./c.py\", name = \"mine\" }]\n\
         [[expect]]\nlocks = [\"mine\"]\nexpect = \"invalid\"\n",
    )
    .unwrap();
    assert_eq!(m.locks[0], LockEntry::plain("redis"));
    assert_eq!(
        (m.locks[1].lock.as_str(), m.locks[1].label()),
        ("exec:redis:./c.py", "mine")
    );
    assert_eq!(
        m.expectation("mine", "none", "on").expectations,
        [Expectation::Invalid]
    );
    assert_eq!(
        m.expectation("redis", "none", "on"),
        CellExpectation::default_valid()
    );
    for (locks, said) in [
        ("[{ lock = \"exec:redis:./c.py\" }]", "needs name"),
        ("[{ name = \"x\" }]", "needs lock"),
        (
            "[{ lock = \"exec:redis:./c.py\", name = 3 }]",
            "must be a string, not an integer",
        ),
        (
            "[{ lock = \"r\", name = \"x\", why = \"y\" }]",
            "lock and name only",
        ),
        ("[[\"redis\"]]", "not an array"),
    ] {
        let refused = Matrix::parse(&format!("locks = {locks}\n")).unwrap_err();
        assert!(refused.contains(said), "{locks}: {refused}");
        assert!(refused.starts_with("line 1: "), "{refused}");
    }
}

#[test]
fn every_list_the_file_can_hold_refuses_to_be_empty_naming_its_key_and_line() {
    // Each list key a matrix file has, at every level: left out, it takes its default; `[]`
    // would silently mean the same, and is refused.
    let base = "locks = [\"redis\"]\nnemeses = [\"none\"]\n";
    let cases = [
        ("locks = []\n", "line 1: locks = []"),
        ("locks = [\"redis\"]\nnemeses = []\n", "line 2: nemeses = []"),
        ("locks = [\"redis\"]\nfencing = []\n", "line 2: fencing = []"),
        (&format!("{base}expect = []\n"), "line 3: expect = []"),
        (
            &format!("{base}[knobs]\nclients = 2\nimage = []\n"),
            "line 5: [knobs] image = []",
        ),
        (
            &format!("{base}[knobs]\nserver-bin = []\n"),
            "line 4: [knobs] server-bin = []",
        ),
        (
            &format!("{base}[[expect]]\nexpect = \"valid\"\n[[expect]]\nlocks = []\nexpect = \"valid\"\n"),
            "line 6: [[expect]] group 2: locks = []",
        ),
        (
            &format!("{base}[[expect]]\nnemeses = []\nexpect = \"valid\"\n"),
            "line 4: [[expect]] group 1: nemeses = []",
        ),
        (
            &format!("{base}[[expect]]\nfencing = []\nexpect = \"valid\"\n"),
            "line 4: [[expect]] group 1: fencing = []",
        ),
        (
            &format!("{base}[[expect]]\nexpect = []\n"),
            "line 4: expect = [] says nothing",
        ),
    ];
    for (text, said) in cases {
        let refused = Matrix::parse(text).unwrap_err();
        assert!(refused.starts_with(said), "{text}: {refused}");
        assert_eq!(refused.lines().count(), 1, "{refused}");
    }
    // The same keys left out are no mistake.
    let m = Matrix::parse(&format!(
        "{base}[knobs]\nclients = 2\n[[expect]]\nexpect = \"valid\"\n"
    ))
    .unwrap();
    assert!(m.fencing.is_empty() && m.knobs.run.images.is_empty() && m.expect[0].locks.is_empty());
}

#[test]
fn a_file_with_no_locks_is_refused_an_empty_one_said_to_be_empty() {
    let dir = tempfile::tempdir().unwrap();
    for (text, said) in [
        ("", "is empty"),
        ("# a matrix, some day\n\n   \n", "is empty"),
        (
            "nemeses = [\"none\"]\n[knobs]\nclients = 2\n",
            "names no locks",
        ),
        ("[[expect]]\nexpect = \"valid\"\n", "names no locks"),
    ] {
        let file = dir.path().join("lockpick.toml");
        std::fs::write(&file, text).unwrap();
        let refused = Matrix::read(&file).unwrap_err().to_string();
        assert!(
            refused.starts_with(&format!("--matrix {} {said}", file.display())),
            "{text:?}: {refused}"
        );
        assert!(refused.contains("locks = ["), "{refused}");
    }
    std::fs::write(dir.path().join("one.toml"), "locks = [\"redis\"]\n").unwrap();
    assert_eq!(
        Matrix::read(&dir.path().join("one.toml"))
            .unwrap()
            .locks
            .len(),
        1
    );
}
