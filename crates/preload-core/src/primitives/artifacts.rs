//! A session's documents: the files its skill's templates make in the session directory
//! (`TEMPLATE_IMPLEMENTATION_LOG.md` makes `IMPLEMENTATION_LOG.md`), and the listing of the
//! directory.

use std::fs;
use std::path::{Path, PathBuf};

/// The prefix a template's file name has and its document's has not.
pub const TEMPLATE_PREFIX: &str = "TEMPLATE_";
/// The session's dialogue with the user.
pub const DIALOGUE: &str = "DIALOGUE.md";

/// The file name of `template` (a path), as written in the state.
pub fn template_name(template: &str) -> Option<&str> {
    Path::new(template).file_name()?.to_str()
}

/// The file name of the document `template` makes: its name without [`TEMPLATE_PREFIX`].
pub fn document_name(template: &str) -> Option<&str> {
    let base = template_name(template)?;
    Some(base.strip_prefix(TEMPLATE_PREFIX).unwrap_or(base))
}

/// The document `template` made in the session directory `dir`, when it exists.
pub fn document_in(dir: &Path, template: &str) -> Option<PathBuf> {
    let file = dir.join(document_name(template)?);
    file.is_file().then_some(file)
}

/// `[Session Files: <dir>]` and the names of its non-dot files, one a line, in name order.
pub fn listing(dir: &Path) -> String {
    let mut names: Vec<String> = fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| !n.starts_with('.'))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    let mut text = format!("[Session Files: {}]\n", dir.display());
    for name in names {
        text.push_str(&name);
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_are_named_after_their_templates() {
        let template = "/h/assets/TEMPLATE_IMPLEMENTATION_LOG.md";
        assert_eq!(
            template_name(template),
            Some("TEMPLATE_IMPLEMENTATION_LOG.md")
        );
        assert_eq!(document_name(template), Some("IMPLEMENTATION_LOG.md"));
        assert_eq!(document_name("assets/PLAN.md"), Some("PLAN.md"));
        assert_eq!(document_name(""), None);
    }

    #[test]
    fn a_listing_names_the_visible_files_in_order() {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(tmp.path().join("b.md"), "").unwrap();
        fs::write(tmp.path().join("a.md"), "").unwrap();
        fs::write(tmp.path().join(".state.json"), "{}").unwrap();
        assert_eq!(
            document_in(tmp.path(), "x/TEMPLATE_a.md"),
            Some(tmp.path().join("a.md"))
        );
        assert_eq!(document_in(tmp.path(), "x/TEMPLATE_c.md"), None);
        assert_eq!(
            listing(tmp.path()),
            format!("[Session Files: {}]\na.md\nb.md\n", tmp.path().display())
        );
    }
}
