//! The questions of an `AskUserQuestion` call and the choice among their options: the first,
//! the one labelled recommended, or drawn at random.

use serde_json::Value;

use crate::primitives::input::HookInput;
use crate::primitives::rng::SplitMix64;

/// How an option is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// The first option.
    First,
    /// The first option labelled `(Recommended)`, else the first.
    Recommended,
    /// A uniformly random option (a random non-empty subset for multi-select).
    Random,
}

impl Strategy {
    /// The strategy named by `value`; `first` for `1` and anything unknown.
    pub fn parse(value: &str) -> Self {
        match value.trim().to_ascii_lowercase().as_str() {
            "recommended" => Self::Recommended,
            "random" => Self::Random,
            _ => Self::First,
        }
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Self::First => "first",
            Self::Recommended => "recommended",
            Self::Random => "random",
        }
    }
}

/// One question of `AskUserQuestion`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    /// The question text (else its header).
    pub text: String,
    /// The option labels, in order.
    pub labels: Vec<String>,
    /// `multiSelect: true`.
    pub multi: bool,
}

fn label_of(option: &Value) -> Option<String> {
    let label = match option {
        Value::String(s) => s.as_str(),
        Value::Object(map) => map.get("label")?.as_str()?,
        _ => return None,
    };
    let label = label.trim();
    (!label.is_empty()).then(|| label.to_owned())
}

/// The questions of `tool_input`, when every one of them has at least one labelled option.
pub fn questions(input: &HookInput) -> Option<Vec<Question>> {
    let list = input.tool_input()?.get("questions")?.as_array()?;
    if list.is_empty() {
        return None;
    }
    list.iter()
        .enumerate()
        .map(|(i, q)| {
            let q = q.as_object()?;
            let labels: Vec<String> = q
                .get("options")?
                .as_array()?
                .iter()
                .filter_map(label_of)
                .collect();
            if labels.is_empty() {
                return None;
            }
            let text = ["question", "header"]
                .iter()
                .find_map(|key| q.get(*key).and_then(Value::as_str).map(str::trim))
                .filter(|t| !t.is_empty())
                .map_or_else(|| format!("(question {})", i + 1), str::to_owned);
            Some(Question {
                text,
                labels,
                multi: q.get("multiSelect").and_then(Value::as_bool) == Some(true),
            })
        })
        .collect()
}

/// The indexes of the options selected for `question`.
pub fn select(question: &Question, strategy: Strategy, rng: &mut SplitMix64) -> Vec<usize> {
    let n = question.labels.len();
    match strategy {
        Strategy::First => vec![0],
        Strategy::Recommended => vec![
            question
                .labels
                .iter()
                .position(|l| l.to_ascii_lowercase().contains("(recommended)"))
                .unwrap_or(0),
        ],
        Strategy::Random if !question.multi => vec![pick(rng, n)],
        Strategy::Random => random_subset(rng, n),
    }
}

fn pick(rng: &mut SplitMix64, n: usize) -> usize {
    usize::try_from(rng.below(n as u64)).unwrap_or(0)
}

/// A uniformly drawn non-empty subset of `0..n`, in order.
fn random_subset(rng: &mut SplitMix64, n: usize) -> Vec<usize> {
    if n == 0 {
        return Vec::new();
    }
    if n < 64 {
        // Masks 1..2^n-1 are exactly the non-empty subsets.
        let mask = 1 + rng.below((1u64 << n) - 1);
        return (0..n).filter(|i| mask & (1 << i) != 0).collect();
    }
    loop {
        let chosen: Vec<usize> = (0..n).filter(|_| rng.next_u64() & 1 == 1).collect();
        if !chosen.is_empty() {
            return chosen;
        }
    }
}

#[cfg(test)]
mod tests;
