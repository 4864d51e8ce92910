//! Shell command lines as the hooks meet them: split into simple commands and words (a Codex
//! shell call's arguments, a Codex hook's command line), and a word quoted for the shell.

/// The simple commands of a command line, as words: split at `;`, `&&`, `||`, `|`, `&` and
/// newlines outside quotes, words split at blanks outside quotes, quotes removed. Redirections
/// and what they name are left out.
pub fn simple_commands(line: &str) -> Vec<Vec<String>> {
    let mut commands = Vec::new();
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut redirect = false;
    let mut chars = line.chars().peekable();
    let end_word =
        |word: &mut String, in_word: &mut bool, words: &mut Vec<String>, redirect: &mut bool| {
            if *in_word {
                if *redirect {
                    *redirect = false;
                } else {
                    words.push(std::mem::take(word));
                }
                word.clear();
                *in_word = false;
            }
        };
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for q in chars.by_ref() {
                    if q == '\'' {
                        break;
                    }
                    word.push(q);
                }
            }
            '"' => {
                in_word = true;
                while let Some(q) = chars.next() {
                    match q {
                        '"' => break,
                        '\\' => {
                            if let Some(n) = chars.next() {
                                word.push(n);
                            }
                        }
                        _ => word.push(q),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(n) = chars.next() {
                    word.push(n);
                }
            }
            ' ' | '\t' => end_word(&mut word, &mut in_word, &mut words, &mut redirect),
            ';' | '|' | '&' | '\n' => {
                end_word(&mut word, &mut in_word, &mut words, &mut redirect);
                if !words.is_empty() {
                    commands.push(std::mem::take(&mut words));
                }
            }
            '<' | '>' => {
                // `2>&1`, `> out`: the redirection and its target are not arguments.
                if in_word && word.chars().all(|d| d.is_ascii_digit()) {
                    word.clear();
                    in_word = false;
                } else {
                    end_word(&mut word, &mut in_word, &mut words, &mut redirect);
                }
                while chars.peek().is_some_and(|n| matches!(n, '>' | '&')) {
                    chars.next();
                }
                redirect = true;
                if chars.peek().is_some_and(char::is_ascii_digit) {
                    // `>&2`: the target was the digit.
                    while chars.peek().is_some_and(char::is_ascii_digit) {
                        chars.next();
                    }
                    redirect = false;
                }
            }
            _ => {
                in_word = true;
                word.push(c);
            }
        }
    }
    end_word(&mut word, &mut in_word, &mut words, &mut redirect);
    if !words.is_empty() {
        commands.push(words);
    }
    commands
}

/// Whether `word` is a variable assignment (`NAME=value`), as a command's leading words may be.
pub fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    })
}

/// The program a command line runs: the first word of its first simple command after the
/// variable assignments before it, unquoted.
pub fn program(line: &str) -> Option<String> {
    simple_commands(line)
        .into_iter()
        .next()?
        .into_iter()
        .find(|w| !is_assignment(w))
}

/// `word` as one shell word: as it is when it needs no quoting, else in single quotes.
pub fn quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_./-:=@%+,".contains(&b));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_splits_into_commands_and_words_as_the_shell_reads_it() {
        assert_eq!(
            simple_commands("cd 'a b' && X=1 cat \"c d\" e\\ f 2>/dev/null | rg -n x > out; ls"),
            [
                vec!["cd", "a b"],
                vec!["X=1", "cat", "c d", "e f"],
                vec!["rg", "-n", "x"],
                vec!["ls"],
            ]
        );
        assert!(
            is_assignment("PRELOAD_AGENT=codex") && !is_assignment("=x") && !is_assignment("a-b=c")
        );
    }

    #[test]
    fn a_quoted_word_is_read_back_as_it_was() {
        for word in [
            "/opt/bin/preload-overflow",
            "/my dir/it's",
            "",
            "--chunk",
            "0/32",
        ] {
            let line = format!("A=1 {} {}", quote(word), quote("next"));
            assert_eq!(program(&line).as_deref(), Some(word), "{line}");
        }
        assert_eq!(
            program("PRELOAD_AGENT=codex '/p q/preload-x' --chunk 0/32").as_deref(),
            Some("/p q/preload-x")
        );
        assert_eq!(program("   "), None);
    }
}
