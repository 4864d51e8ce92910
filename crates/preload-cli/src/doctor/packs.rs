//! The context-packs check of `preload doctor`: each configuration file parses (an error names
//! the file, line and column), and the files its packs name exist.

use std::path::Path;

use super::Finding;
use crate::words::plural;
use preload_core::mechanisms::packs::{self, Strategy};

/// The context-packs files of the project at `root` (or only the global one without a project).
pub(super) fn check_packs(home: &Path, root: Option<&Path>, findings: &mut Vec<Finding>) {
    let claude = home.join(".claude");
    let files = match root {
        Some(root) => packs::config_files(root, &claude).to_vec(),
        None => vec![claude.join(packs::GLOBAL_FILE)],
    };
    for file in files {
        match packs::read_file(&file) {
            None => {}
            Some(Err(e)) => findings.push(Finding::fail(
                format!("context packs: {e}"),
                "fix the file; until then the hooks go on without its packs",
            )),
            Some(Ok(config)) => {
                // Without a project, relative paths name nothing yet.
                let missing: Vec<String> = root
                    .map(|root| {
                        config
                            .packs
                            .iter()
                            .flat_map(|p| {
                                p.files
                                    .iter()
                                    .filter(|f| f.strategy != Strategy::Skip)
                                    .filter(|f| {
                                        !packs::resolve_path(root, home, &f.path.0).is_file()
                                    })
                                    .map(move |f| format!("{} ({})", f.path.0, p.name))
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                if missing.is_empty() {
                    findings.push(Finding::ok(format!(
                        "context packs: {} in {}",
                        plural(config.packs.len(), "pack", "packs"),
                        file.display()
                    )));
                } else {
                    findings.push(Finding::warn(
                        format!(
                            "context packs in {}: missing {}",
                            file.display(),
                            missing.join(", ")
                        ),
                        "a missing file goes out as a one-line note; fix the path or create it",
                    ));
                }
            }
        }
    }
}

/// The configuration errors alone, for stderr.
pub(super) fn errors(home: &Path, root: Option<&Path>) -> Vec<String> {
    let mut findings = Vec::new();
    check_packs(home, root, &mut findings);
    findings
        .into_iter()
        .filter(|f| f.level == super::Level::Fail)
        .map(|f| f.what)
        .collect()
}
