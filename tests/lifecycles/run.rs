//! The driver: generated cases through proptest's `TestRunner`, deterministic and seedable.
//!
//! * `PRELOAD_LIFECYCLE_CASES`: cases per run (default [`DEFAULT_CASES`]), shared out over
//!   [`SHARDS`] tests (`generated_lifecycles_shard_<k>`), each its own seed (the run's plus
//!   `k`): a count of cases bounds each test's work, and the shards run side by side.
//! * `PRELOAD_LIFECYCLE_SEED`: the RNG seed (default [`DEFAULT_SEED`]); a failure prints it and
//!   the command that plays that run again. With the seed set, shard 0 plays every case of it.
//! * `PRELOAD_SOAK_SECONDS`: soak (`soak_generated_lifecycles`, ignored unless asked for): new
//!   seeded runs until the time is up (seeds from the clock).
//! * `PRELOAD_LIFECYCLE_OPS`: the longest generated sequence (default 30).
//! * `PRELOAD_OWNERSHIP`: `client` or `supervisor` ([`Ownership`]) for every case; else the
//!   even shards (and soak runs) play client-owned sessions and the odd ones one supervisor PID.
//!
//! On failure: the seed, the shrunk sequence as Rust code for `regressions.rs`, and the
//! violated invariant with the step list, the window, the state and the log tail.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use proptest::test_runner::{Config, RngSeed, TestCaseError, TestError, TestRunner};

use crate::ops::{self, Op};
use crate::world::{Ownership, World};

/// Cases of one ordinary run (64 passing cases took 25 s with debug binaries on two cores, so
/// 150 take about a minute).
pub const DEFAULT_CASES: u32 = 150;
/// The tests the cases of a run are shared out over: 25 cases each by default, about 10 s on
/// a quiet 2-core machine, well under the 4 minutes nextest gives one beside another build.
pub const SHARDS: u32 = 6;
/// The seed of an ordinary run.
pub const DEFAULT_SEED: u64 = 20_240_601;

fn env_num(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

/// Play `ops` (after a start-up of slot 0), checking after every step; the report of the first
/// violation.
pub fn play(ops: &[Op]) -> Result<(), String> {
    play_ignoring(ops, &[])
}

/// [`play`], where every op must run (none skipped as making no sense at that point): for a
/// regression whose sequence must reach its last step to mean anything.
pub fn play_through(ops: &[Op]) -> Result<(), String> {
    play_through_on(preload_test_support::sandbox::Wiring::of_run(), ops)
}

/// [`play_through`] on `wiring`, whatever the run's.
pub fn play_through_on(
    wiring: preload_test_support::sandbox::Wiring,
    ops: &[Op],
) -> Result<(), String> {
    play_through_as(crate::world::Client::of_run(), wiring, ops)
}

/// [`play_through_on`] for `client`, whatever the run's.
pub fn play_through_as(
    client: crate::world::Client,
    wiring: preload_test_support::sandbox::Wiring,
    ops: &[Op],
) -> Result<(), String> {
    play_through_owned(client, wiring, Ownership::Client, ops)
}

/// [`play_through`] under one supervisor PID (the engine's `run.sh`), on the run's wiring and
/// client.
pub fn play_supervised(ops: &[Op]) -> Result<(), String> {
    play_through_owned(
        crate::world::Client::of_run(),
        preload_test_support::sandbox::Wiring::of_run(),
        Ownership::Supervisor,
        ops,
    )
}

/// [`play_through_as`] with sessions owned as `ownership` says.
pub fn play_through_owned(
    client: crate::world::Client,
    wiring: preload_test_support::sandbox::Wiring,
    ownership: Ownership,
    ops: &[Op],
) -> Result<(), String> {
    let mut world = World::owned(client, ownership);
    world.sb.wiring = wiring;
    let all: Vec<Op> = std::iter::once(Op::Startup(0))
        .chain(ops.iter().cloned())
        .collect();
    for op in &all {
        let ran = world.apply(op);
        let mut problems = world.check();
        if !ran {
            problems.push(format!("(sequence) {op:?} did not run"));
        }
        if !problems.is_empty() {
            return Err(report(&world, &problems));
        }
    }
    Ok(())
}

/// [`play`] without reporting the invariants tagged `ignore` (a known finding, to pin another).
pub fn play_ignoring(ops: &[Op], ignore: &[&str]) -> Result<(), String> {
    play_owned(Ownership::of_run(Ownership::Client), ops, ignore)
}

/// [`play_ignoring`] with sessions owned as `ownership` says.
fn play_owned(ownership: Ownership, ops: &[Op], ignore: &[&str]) -> Result<(), String> {
    let mut world = World::owned(crate::world::Client::of_run(), ownership);
    world.ignore = ignore.iter().map(|t| (*t).to_owned()).collect();
    let all: Vec<Op> = std::iter::once(Op::Startup(0))
        .chain(ops.iter().cloned())
        .collect();
    for op in &all {
        world.apply(op);
        let problems = world.check();
        if !problems.is_empty() {
            return Err(report(&world, &problems));
        }
    }
    Ok(())
}

/// A readable report: the problems, the steps, each window's entries, the records, the log tail.
pub fn report(world: &World, problems: &[String]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "VIOLATED:");
    for p in problems {
        let _ = writeln!(out, "  {p}");
    }
    let _ = writeln!(
        out,
        "STEPS (wiring {:?}, client {:?}, ownership {:?}):",
        world.sb.wiring,
        world.client,
        world.ownership()
    );
    for (i, s) in world.steps.iter().enumerate() {
        let _ = writeln!(out, "  {i:>3}. {s}");
    }
    for (slot, p) in world.procs.iter().enumerate() {
        let Some(p) = p else { continue };
        let _ = writeln!(
            out,
            "SLOT {slot}: pid {} conversation {} invoked {:?} held-at-resume {:?} reloaded {:?} rounds {}",
            p.pid, p.conversation, p.invoked, p.held_at_resume, p.reloaded, p.window.rounds
        );
        for e in &p.window.entries {
            let heads: Vec<String> = e
                .text
                .lines()
                .filter(|l| l.starts_with("[Preloaded: "))
                .map(str::to_owned)
                .collect();
            let _ = writeln!(
                out,
                "  #{} {:?} {} ({} chars) {}",
                e.exchange,
                e.kind,
                e.label,
                e.text.len(),
                heads.join(" ")
            );
        }
        for (a, w) in &p.subs {
            let _ = writeln!(
                out,
                "  sub-agent {a}: {} entries, {} receptions",
                w.entries.len(),
                w.receptions().len()
            );
        }
        if let Some((at, state)) = world.record_of(world.owner(slot)) {
            let _ = writeln!(
                out,
                "  record {at}: currentPhase {} preloadedFiles {} pendingPreloads {}",
                state["currentPhase"], state["preloadedFiles"], state["pendingPreloads"]
            );
        }
    }
    let events = world.sb.events();
    let _ = writeln!(out, "LOG TAIL:");
    for e in events.iter().skip(events.len().saturating_sub(25)) {
        let _ = writeln!(
            out,
            "  {} {} {} {}",
            e["hook"], e["event"], e["file"], e["source"]
        );
    }
    out
}

/// One proptest run of `cases` cases from `seed`, owned as `ownership` says; the failure,
/// shrunk, as a report.
pub fn run_seed(seed: u64, cases: u32, ownership: Ownership) -> Result<(), String> {
    let max_ops = usize::try_from(env_num("PRELOAD_LIFECYCLE_OPS").unwrap_or(30)).unwrap_or(30);
    let config = Config {
        cases,
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: None,
        max_shrink_iters: 300,
        max_shrink_time: 240_000,
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    let result = runner.run(&ops::lifecycle(max_ops), |ops| {
        play_owned(ownership, &ops, &[]).map_err(TestCaseError::fail)
    });
    let replay = match ownership {
        Ownership::Supervisor => "crate::run::play_supervised(&ops)",
        Ownership::Client => "crate::run::play(&ops)",
    };
    match result {
        Ok(()) => Ok(()),
        Err(TestError::Fail(reason, ops)) => Err(format!(
            "\n==== LIFECYCLE FAILURE: seed {seed} (PRELOAD_LIFECYCLE_SEED={seed} PRELOAD_OWNERSHIP={}), wiring {:?}, client {:?} ====\n\
             shrunk sequence for regressions.rs:\n\n{}\n    {replay}.unwrap_or_else(|r| panic!(\"{{r}}\"));\n\n{}",
            ownership.name(),
            preload_test_support::sandbox::Wiring::of_run(),
            crate::world::Client::of_run(),
            ops::as_rust(&ops),
            reason.message()
        )),
        Err(TestError::Abort(reason)) => Err(format!("seed {seed}: aborted: {reason}")),
    }
}

/// Shard `shard` of the run's cases: its share of `PRELOAD_LIFECYCLE_CASES`, from its own seed.
fn run_shard(shard: u32) {
    let wiring = preload_test_support::sandbox::Wiring::of_run();
    let client = crate::world::Client::of_run();
    let ownership = Ownership::of_run(if shard % 2 == 1 {
        Ownership::Supervisor
    } else {
        Ownership::Client
    });
    let cases = env_num("PRELOAD_LIFECYCLE_CASES")
        .map_or(DEFAULT_CASES, |c| u32::try_from(c).unwrap_or(u32::MAX));
    let (seed, cases) = match env_num("PRELOAD_LIFECYCLE_SEED") {
        // One named run: shard 0 plays it whole, as the failure that named it did.
        Some(seed) => (seed, if shard == 0 { cases } else { 0 }),
        None => (
            DEFAULT_SEED + u64::from(shard),
            cases / SHARDS + u32::from(shard < cases % SHARDS),
        ),
    };
    eprintln!(
        "lifecycles: shard {shard} of {SHARDS}: seed {seed}, {cases} cases, wiring {wiring:?}, client {client:?}, ownership {ownership:?}"
    );
    if cases == 0 {
        return;
    }
    let failure = run_seed(seed, cases, ownership).err();
    assert!(
        failure.is_none(),
        "{}\nplay this run again: PRELOAD_LIFECYCLE_SEED={seed} PRELOAD_LIFECYCLE_CASES={cases} \
         PRELOAD_OWNERSHIP={} cargo test --test lifecycles generated_lifecycles_shard_0",
        failure.unwrap_or_default(),
        ownership.name()
    );
}

/// One test per shard.
macro_rules! shards {
    ($($name:ident = $shard:expr),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                run_shard($shard);
            }
        )*
        /// Every shard has its test.
        #[test]
        fn every_shard_has_its_test() {
            assert_eq!([$($shard),*].len(), SHARDS as usize);
        }
    };
}

shards!(
    generated_lifecycles_shard_0 = 0,
    generated_lifecycles_shard_1 = 1,
    generated_lifecycles_shard_2 = 2,
    generated_lifecycles_shard_3 = 3,
    generated_lifecycles_shard_4 = 4,
    generated_lifecycles_shard_5 = 5,
);

/// `make soak`: new seeds until `PRELOAD_SOAK_SECONDS` are up.
#[test]
#[ignore = "make soak runs it: new seeds until PRELOAD_SOAK_SECONDS are up"]
fn soak_generated_lifecycles() {
    let seconds = env_num("PRELOAD_SOAK_SECONDS").unwrap_or(60);
    soak(Duration::from_secs(seconds));
}

/// New seeds until `time` is up; every failure reported at the end.
fn soak(time: Duration) {
    let start = Instant::now();
    let base = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_secs());
    let mut failures = Vec::new();
    let mut runs = 0u64;
    while start.elapsed() < time {
        let seed = base.wrapping_mul(1_000).wrapping_add(runs);
        let ownership = Ownership::of_run(if runs % 2 == 1 {
            Ownership::Supervisor
        } else {
            Ownership::Client
        });
        eprintln!(
            "soak: seed {seed} (PRELOAD_LIFECYCLE_SEED={seed} PRELOAD_LIFECYCLE_CASES=4 PRELOAD_OWNERSHIP={}), wiring {:?}, client {:?}",
            ownership.name(),
            preload_test_support::sandbox::Wiring::of_run(),
            crate::world::Client::of_run()
        );
        if let Err(report) = run_seed(seed, 4, ownership) {
            eprintln!("{report}");
            failures.push(report);
        }
        runs += 1;
    }
    eprintln!(
        "soak: {runs} runs of 4 cases in {:?}, {} failed",
        start.elapsed(),
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
