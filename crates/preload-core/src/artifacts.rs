//! A session's documents: the files its skill's templates make in the session directory
//! (`TEMPLATE_IMPLEMENTATION_LOG.md` makes `IMPLEMENTATION_LOG.md`).

use std::path::Path;

/// The prefix a template's file name has and its document's has not.
pub const TEMPLATE_PREFIX: &str = "TEMPLATE_";

/// The file name of `template` (a path), as written in the state.
pub fn template_name(template: &str) -> Option<&str> {
    Path::new(template).file_name()?.to_str()
}

/// The file name of the document `template` makes: its name without [`TEMPLATE_PREFIX`].
pub fn document_name(template: &str) -> Option<&str> {
    let base = template_name(template)?;
    Some(base.strip_prefix(TEMPLATE_PREFIX).unwrap_or(base))
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
}
