use serde_json::json;

use super::*;

fn q(labels: &[&str], multi: bool) -> Question {
    Question {
        text: "Which?".into(),
        labels: labels.iter().map(|s| (*s).to_owned()).collect(),
        multi,
    }
}

#[test]
fn strategies_parse_leniently() {
    assert_eq!(Strategy::parse("first"), Strategy::First);
    assert_eq!(Strategy::parse("1"), Strategy::First);
    assert_eq!(Strategy::parse("whatever"), Strategy::First);
    assert_eq!(Strategy::parse(" Recommended "), Strategy::Recommended);
    assert_eq!(Strategy::parse("RANDOM"), Strategy::Random);
}

#[test]
fn selections_follow_the_strategy() {
    let mut rng = SplitMix64::new(1);
    let plain = q(&["A", "B (Recommended)", "C"], false);
    assert_eq!(select(&plain, Strategy::First, &mut rng), vec![0]);
    assert_eq!(select(&plain, Strategy::Recommended, &mut rng), vec![1]);
    assert_eq!(
        select(&q(&["A", "B"], false), Strategy::Recommended, &mut rng),
        vec![0]
    );
    let multi = q(&["A", "B", "C"], true);
    assert_eq!(select(&multi, Strategy::First, &mut rng), vec![0]);
    let mut sizes = std::collections::BTreeSet::new();
    for _ in 0..200 {
        let picked = select(&multi, Strategy::Random, &mut rng);
        assert!(!picked.is_empty() && picked.iter().all(|&i| i < 3));
        sizes.insert(picked.len());
    }
    assert_eq!(sizes.into_iter().collect::<Vec<_>>(), vec![1, 2, 3]);
    let wide: Vec<String> = (0..70).map(|i| i.to_string()).collect();
    let wide = Question {
        text: "w".into(),
        labels: wide,
        multi: true,
    };
    assert!(!select(&wide, Strategy::Random, &mut rng).is_empty());
}

#[test]
fn questions_need_labelled_options() {
    let input = |questions: serde_json::Value| {
        HookInput::from_value(
            json!({"tool_name": "AskUserQuestion", "tool_input": {"questions": questions}}),
        )
    };
    let ok = questions(&input(
        json!([{"question": "Q?", "options": [{"label": "A"}, "B"], "multiSelect": true}]),
    ))
    .unwrap();
    assert_eq!(
        ok,
        vec![Question {
            text: "Q?".into(),
            labels: vec!["A".into(), "B".into()],
            multi: true
        }]
    );
    assert!(questions(&input(json!([]))).is_none());
    assert!(questions(&input(json!([{"question": "Q?", "options": []}]))).is_none());
    assert!(
        questions(&input(
            json!([{"question": "Q?", "options": [{"description": "x"}]}])
        ))
        .is_none()
    );
    assert!(questions(&input(json!("nope"))).is_none());
    let headed = questions(&input(json!([{"header": "Pick", "options": ["A"]}]))).unwrap();
    assert_eq!(headed[0].text, "Pick");
}
