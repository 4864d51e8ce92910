//! The points the real-engine run is judged on, one function each, from what the model received
//! and the delivery log.

use super::*;

/// (1) The six core standards, every part exactly once, in the first context before the first
/// tool call.
pub(super) fn core_standards(j: &Judged) -> Point {
    let mut one = Point::new("1 core standards in the first context");
    let first = &j.first;
    let first_call = first
        .messages
        .iter()
        .position(|m| !m.tool_uses.is_empty())
        .unwrap_or(first.messages.len());
    one.problems.extend(first.check_arrives_within(
        &j.core,
        0,
        first_call,
        "before the first tool call",
    ));
    one.problems.extend(
        first
            .check_each_once(&j.core)
            .into_iter()
            .filter(|p| j.core.iter().any(|c| p.contains(c.as_str()))),
    );
    one.evidence.push(j.run1_request.clone());
    one.evidence.extend(arrivals(first, &j.core));
    one
}

/// (2) Every file the hooks logged into a context reached it exactly once, no literal
/// backslash-n. Run 2's SessionStart (resume) comes before its compaction, but the client holds
/// its contexts for the next request, so they land after the summary, in the new context: the
/// summarised conversation is run 1's, and the new one holds everything from run 2 on.
pub(super) fn each_once(j: &Judged) -> Point {
    let mut two = Point::new("2 every preloaded file once per context, real newlines");
    let logged_run1 = delivered_to_main(&j.log, 0, j.log_after_run1);
    let logged_after = delivered_to_main(&j.log, j.log_after_run1, usize::MAX);
    let queued_at_end: Vec<String> =
        preload_test_support::sandbox::strings(&j.state, "pendingPreloads");
    for (what, got, files, last) in [
        (&j.run1_request, &j.first, &logged_run1, false),
        (&j.compaction_request, &j.summarised, &logged_run1, false),
        (&j.run3_request, &j.after, &logged_after, true),
    ] {
        let mut expected = files.clone();
        for c in &j.core {
            if !expected.contains(c) {
                expected.push(c.clone());
            }
        }
        for problem in got.check_each_once(&expected) {
            // A file whose last parts are still queued when the last run ends is under way,
            // not lost.
            let under_way = problem.starts_with("incomplete:")
                && queued_at_end.iter().any(|q| problem.ends_with(q.as_str()));
            if under_way && last {
                two.evidence.push(format!(
                    "{what}: still going out when the run ended: {problem}"
                ));
            } else {
                two.problems.push(format!("{what}: {problem}"));
            }
        }
        for problem in got.check_no_literal_newlines() {
            two.problems.push(format!("{what}: {problem}"));
        }
        two.evidence.push(format!(
            "{what}: {} blocks of {} files",
            got.headers().len(),
            expected.len()
        ));
    }
    two
}

/// (3) Each phase's command files within two ordinary tool calls of entering it.
pub(super) fn phase_commands(j: &Judged) -> Point {
    let mut three = Point::new("3 each phase's commands within two ordinary calls");
    let first = &j.first;
    let mut entries: Vec<(String, usize)> = Vec::new();
    if let Some(at) = first.bash_call("session activate") {
        entries.push(("0".into(), at));
    }
    for (label, name) in PHASES {
        if let Some(at) = first.bash_call(&format!("\"{label}: {name}\"")) {
            entries.push(((*label).into(), at));
        } else {
            three
                .problems
                .push(format!("no transition to {label} in run 1"));
        }
    }
    for (label, at) in &entries {
        let by = first.after_ordinary_calls(*at, PHASE_CALLS);
        let wanted: Vec<String> =
            j.p.phase_files(label)
                .into_iter()
                .filter(|f| first.complete_at(f).is_none_or(|done| done > *at))
                .collect();
        let when = format!("within {PHASE_CALLS} ordinary calls of entering phase {label}");
        three
            .problems
            .extend(first.check_arrives_within(&wanted, *at, by, &when));
        three.evidence.push(format!(
            "{}: phase {label} entered at m{at}, two calls end at m{by}: {}",
            j.run1_request,
            arrivals(first, &wanted).join("; ")
        ));
    }
    three
}

/// (4) The project's and the package's directives arrive after the engine's activation.
pub(super) fn directives(j: &Judged) -> Point {
    let mut four = Point::new("4 package and project directives after the activation");
    let first = &j.first;
    let activated = first.bash_call("session activate").unwrap_or(usize::MAX);
    let directives: Vec<String> = [
        ".directives/AGENTS.md",
        ".directives/INVARIANTS.md",
        "packages/estimate/.directives/INVARIANTS.md",
        "packages/estimate/.directives/TESTING.md",
        "packages/estimate/.directives/PITFALLS.md",
        "packages/estimate/.directives/CONTRIBUTING.md",
        "packages/estimate/.directives/CHECKLIST.md",
    ]
    .iter()
    .map(|r| j.p.project(r))
    .collect();
    for d in &directives {
        match (first.first(d), first.complete_at(d)) {
            (Some(begun), Some(_)) if begun > activated => {}
            (Some(begun), _) => four.problems.push(format!(
                "{} arrived at m{begun}, not after the activation (m{activated})",
                short(d)
            )),
            (None, _) => four
                .problems
                .push(format!("{} never reached the model", short(d))),
        }
    }
    four.evidence
        .push(format!("{}: activation at m{activated}", j.run1_request));
    four.evidence.extend(arrivals(first, &directives));
    four
}

/// (5) After the compaction: the standards complete, SKILL.md once counting the client's
/// re-injection, the current phase's commands, the session found, no call denied, and every
/// file the session counts as in the new context reached it.
pub(super) fn after_compaction(j: &Judged) -> Point {
    let mut five = Point::new("5 the context after the compaction of the resumed conversation");
    let after = &j.after;
    if after
        .text_position("continued from a previous conversation")
        .is_none()
    {
        five.problems
            .push("run 3's conversation is not the compacted one".into());
    }
    five.problems.extend(after.check_arrives_within(
        &j.core,
        0,
        after.messages.len(),
        "after the compaction",
    ));
    let skill = j.p.skill_arrivals(after);
    if skill.len() != 1 {
        five.problems.push(format!(
            "SKILL.md reached the new context {} times: {skill:?}",
            skill.len()
        ));
    }
    let current = j.state["currentPhase"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let current_label = current.split(": ").next().unwrap_or_default().to_owned();
    let phase_now = j.p.phase_files(&current_label);
    let by = after.after_ordinary_calls(0, PHASE_CALLS);
    five.problems.extend(after.check_arrives_within(
        &phase_now,
        0,
        by,
        &format!("within {PHASE_CALLS} ordinary calls after the compaction"),
    ));
    let seen = banners(after);
    if seen.is_empty() {
        five.problems
            .push("no [Session Context] banner in the new context".into());
    }
    for (i, line) in &seen {
        if line.contains("Session: (none)") {
            five.problems
                .push(format!("the banner at m{i} finds no session: {line}"));
        }
    }
    for (i, e) in after.errors() {
        five.problems.push(format!("m{i} denied or failed: {e}"));
    }
    // What the hooks count as in this context window must be in it: a file recorded as
    // delivered that never reached the model is one it will never get.
    let skill_md =
        j.p.skill_real
            .join("SKILL.md")
            .to_string_lossy()
            .into_owned();
    for file in preload_test_support::sandbox::strings(&j.state, "preloadedFiles") {
        let client_reload = file == skill_md && !skill.is_empty();
        if after.complete_at(&file).is_none() && !client_reload {
            five.problems.push(format!(
                "the session counts {} as in the new context, but it never reached it",
                short(&file)
            ));
        }
    }
    // The compaction is one of a resumed conversation: the process that loaded the skill is
    // gone, so the client does not put SKILL.md back (it only recalls a re-injection an earlier
    // compaction made), and SessionStart (compact) must deliver it, exactly once.
    let expansions = after.count_text(EXPANSION);
    let blocks: Vec<String> = after
        .headers()
        .iter()
        .filter(|h| h.path == skill_md)
        .map(|h| format!("{} at m{}", short(&h.label), h.message))
        .collect();
    five.evidence.push(format!(
        "{}; current phase {current:?}; SKILL.md: {} (the client's expansions: {expansions}, \
         preloaded blocks: {blocks:?}); banners: {seen:?}",
        j.run3_request,
        skill.len()
    ));
    let compacted = &j.state_after_compaction;
    five.evidence.push(format!(
        "the session after run 2's SessionStart (compact): invokedSkills {}, reloadedSkills {}, \
         SKILL.md in preloadedFiles: {}",
        compacted.get("invokedSkills").unwrap_or(&Value::Null),
        compacted.get("reloadedSkills").unwrap_or(&Value::Null),
        preload_test_support::sandbox::strings(compacted, "preloadedFiles").contains(&skill_md)
    ));
    five.evidence.extend(arrivals(after, &j.core));
    five.evidence.extend(arrivals(after, &phase_now));
    five
}

/// (6) On the plain resume (run 3), nothing the conversation already holds is sent again. The
/// client puts every SessionStart context of runs 2 and 3 after run 3's prompt, one labelled
/// context per event: run 2's resume, its compaction, run 3's resume (the last). Run 3's must
/// add no block another context of the conversation holds, and the hooks' log must not count
/// anything as delivered by it.
pub(super) fn plain_resume(j: &Judged) -> Point {
    let mut six = Point::new("6 the plain resume sends nothing the conversation holds");
    let starts: Vec<_> = j
        .after
        .hook_contexts()
        .into_iter()
        .filter(|c| c.label == "SessionStart")
        .collect();
    let held: Vec<String> = starts
        .iter()
        .rev()
        .skip(1)
        .flat_map(|c| preload_core::primitives::delivery::block_paths(&c.text))
        .collect();
    match starts.last() {
        Some(last) if starts.len() >= 3 => {
            let blocks = preload_core::primitives::delivery::block_paths(&last.text);
            for p in blocks.iter().filter(|p| held.contains(p)) {
                six.problems.push(format!(
                    "run 3's SessionStart (resume) sends again what the conversation holds: {}",
                    short(p)
                ));
            }
            six.evidence.push(format!(
                "{}: {} SessionStart contexts; run 3's is {} chars with {} blocks: {:?}",
                j.run3_request,
                starts.len(),
                last.text.chars().count(),
                blocks.len(),
                last.text.lines().find(|l| l.contains("[Session Context]"))
            ));
        }
        _ => six.problems.push(format!(
            "{}: expected the SessionStart contexts of run 2 (resume, compact) and of run 3 \
             (resume), found {}",
            j.run3_request,
            starts.len()
        )),
    }
    let logged_again: Vec<String> = deliveries(&j.log)
        .into_iter()
        .filter(|d| d.index >= j.log_after_run2 && d.hook == "session-start")
        .map(|d| format!("{} ({})", short(&d.file), d.source))
        .collect();
    if !logged_again.is_empty() {
        six.problems.push(format!(
            "the hooks logged deliveries by run 3's SessionStart: {logged_again:?}"
        ));
    }
    six
}
