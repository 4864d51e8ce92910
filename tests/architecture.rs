//! The shape of the code, checked: the library's layers as `lib.rs` declares them, imports that
//! point down only, no import cycles, the same layers in `docs/architecture.md`, a first doc
//! line on every module, files small enough to read in one sitting, and state keys spelled
//! only in `fields.rs`.
//!
//! The checks read the source as text (no build step): `use crate::…` and `crate::…` paths in
//! code, outside comments and unit tests. Each check is tried on a small made-up input first,
//! so a check that could never fail fails here.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The longest a source file may grow (lines, tests in sibling files excluded).
const MAX_FILE_LINES: usize = 450;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn core_src() -> PathBuf {
    root().join("crates/preload-core/src")
}

/// One layer of the library: its number (1 is the top), name and modules.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Layer {
    number: usize,
    name: String,
    modules: BTreeSet<String>,
}

/// The layers `lib.rs` declares: `// Layer N: name.` followed by `pub mod x;` lines.
fn declared_layers(lib_rs: &str) -> Vec<Layer> {
    let mut layers: Vec<Layer> = Vec::new();
    for line in lib_rs.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("// Layer ") {
            let (number, name) = rest.split_once(':').expect("`// Layer N: name.`");
            layers.push(Layer {
                number: number.trim().parse().expect("a layer number"),
                name: name.trim().trim_end_matches('.').to_owned(),
                modules: BTreeSet::new(),
            });
        } else if let Some(module) = line
            .strip_prefix("pub mod ")
            .and_then(|m| m.strip_suffix(';'))
        {
            layers
                .last_mut()
                .expect("a `pub mod` line after a `// Layer` line")
                .modules
                .insert(module.to_owned());
        }
    }
    layers
}

/// Code without its unit tests (an inline `#[cfg(test)] mod tests { … }`, attributes allowed
/// between the two, runs to the end of the file) and without line comments.
fn code_of(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let tests_at = (0..lines.len()).find(|&i| {
        lines[i] == "#[cfg(test)]"
            && lines[i + 1..]
                .iter()
                .find(|l| !l.starts_with("#["))
                .is_some_and(|l| *l == "mod tests {")
    });
    lines[..tests_at.unwrap_or(lines.len())]
        .iter()
        .filter(|line| !line.trim_start().starts_with("//"))
        .copied()
        .collect::<Vec<_>>()
        .join("\n")
}

fn identifier_at(text: &str) -> &str {
    let end = text
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(text.len());
    &text[..end]
}

/// The top-level modules of the crate that `code` names: `crate::x…` and the first names of a
/// grouped `use crate::{x, y::z, …}`.
fn crate_references(code: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0usize;
            let mut start = true;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => start = true,
                    c if c.is_whitespace() => {}
                    _ if start => {
                        found.insert(identifier_at(&group[i..]).to_owned());
                        start = false;
                    }
                    _ => {}
                }
            }
        } else {
            let name = identifier_at(rest);
            if !name.is_empty() {
                found.insert(name.to_owned());
            }
        }
    }
    // `Context`, `HookInput` and the runner's types are re-exported at the root.
    let reexports = [
        ("Context", "context"),
        ("HookInput", "input"),
        ("HookError", "runner"),
        ("HookEvent", "runner"),
        ("HookOutput", "runner"),
    ];
    for (name, module) in reexports {
        if found.remove(name) {
            found.insert(module.to_owned());
        }
    }
    found
}

fn is_test_file(path: &Path) -> bool {
    path.file_name().is_some_and(|n| n == "tests.rs")
        || path.components().any(|c| c.as_os_str() == "tests")
}

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The source files of top-level module `module` of the crate at `src`: `module.rs` and what
/// lies under `module/`, unit-test files excluded.
fn module_files(src: &Path, module: &str) -> Vec<PathBuf> {
    let mut files = vec![src.join(format!("{module}.rs"))];
    let dir = src.join(module);
    if dir.is_dir() {
        files.extend(rust_files(&dir));
    }
    files.retain(|f| f.is_file() && !is_test_file(f));
    files
}

/// The module graph: each module with the modules it uses (itself left out).
fn module_graph(src: &Path, layers: &[Layer]) -> BTreeMap<String, BTreeSet<String>> {
    let mut graph = BTreeMap::new();
    for module in layers.iter().flat_map(|l| &l.modules) {
        let mut uses = BTreeSet::new();
        for file in module_files(src, module) {
            uses.extend(crate_references(&code_of(
                &fs::read_to_string(file).unwrap(),
            )));
        }
        uses.remove(module);
        graph.insert(module.clone(), uses);
    }
    graph
}

/// Every use of a module of a higher layer (a smaller number), as `user -> used` lines.
fn upward_uses(layers: &[Layer], graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let layer_of: BTreeMap<&str, &Layer> = layers
        .iter()
        .flat_map(|l| l.modules.iter().map(move |m| (m.as_str(), l)))
        .collect();
    let mut wrong = Vec::new();
    for (user, uses) in graph {
        let own = layer_of[user.as_str()];
        for used in uses {
            match layer_of.get(used.as_str()) {
                Some(layer) if layer.number < own.number => wrong.push(format!(
                    "{user} ({}) uses {used} ({})",
                    own.name, layer.name
                )),
                Some(_) => {}
                None => wrong.push(format!("{user} uses {used}, which no layer declares")),
            }
        }
    }
    wrong
}

/// The import cycles of the graph, each as its modules in order.
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    fn walk(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
        found: &mut Vec<Vec<String>>,
    ) {
        if let Some(at) = path.iter().position(|n| n == node) {
            found.push(path[at..].to_vec());
            return;
        }
        if done.contains(node) {
            return;
        }
        path.push(node.to_owned());
        for next in graph.get(node).into_iter().flatten() {
            walk(next, graph, path, done, found);
        }
        path.pop();
        done.insert(node.to_owned());
    }
    let mut found = Vec::new();
    let mut done = BTreeSet::new();
    for node in graph.keys() {
        walk(node, graph, &mut Vec::new(), &mut done, &mut found);
    }
    found
}

/// The names in backticks (`x`, [`x`], [`mod@x`]) of `text`.
fn backticked(text: &str) -> BTreeSet<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(|name| name.trim_start_matches("mod@").to_owned())
        .filter(|name| name.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
        .collect()
}

/// The layers a text lists as `N. **name**: modules in backticks`, an item running on until
/// the next item or a blank line. `prefix` is what every line starts with (`//!` in `lib.rs`,
/// nothing in Markdown).
fn listed_layers(text: &str, prefix: &str) -> Vec<Layer> {
    let mut layers: Vec<Layer> = Vec::new();
    let mut open = false;
    for line in text.lines() {
        let Some(line) = line.strip_prefix(prefix).map(str::trim) else {
            open = false;
            continue;
        };
        let item = line.split_once(". **").and_then(|(n, rest)| {
            let number = n.parse().ok()?;
            let (name, modules) = rest.split_once("**")?;
            Some((number, name, modules))
        });
        if let Some((number, name, modules)) = item {
            layers.push(Layer {
                number,
                name: name.to_owned(),
                modules: backticked(modules),
            });
            open = true;
        } else if line.is_empty() || line.starts_with('#') {
            open = false;
        } else if open {
            let last = layers.last_mut().unwrap();
            last.modules.extend(backticked(line));
        }
    }
    layers
}

fn layers_of_the_library() -> Vec<Layer> {
    let layers = declared_layers(&fs::read_to_string(core_src().join("lib.rs")).unwrap());
    assert!(layers.len() >= 3, "lib.rs declares no layers: {layers:?}");
    layers
}

#[test]
fn the_checks_catch_what_they_look_for() {
    let lib = "// Layer 1: top.\npub mod a;\n\n// Layer 2: bottom.\npub mod b;\npub mod c;\n";
    let layers = declared_layers(lib);
    assert_eq!(layers.len(), 2);
    assert_eq!(layers[1].modules, ["b", "c"].map(String::from).into());

    let code = "use crate::{a::X, c};\n// use crate::z;\nfn f() { crate::b::g(); }\n\
                #[cfg(test)]\n#[allow(clippy::unwrap_used)]\nmod tests {\n    use crate::q;\n}\n";
    assert_eq!(
        crate_references(&code_of(code)),
        ["a", "b", "c"].map(String::from).into()
    );

    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a".to_owned(), BTreeSet::from(["b".to_owned()])),
        ("b".to_owned(), BTreeSet::from(["a".to_owned()])),
        ("c".to_owned(), BTreeSet::new()),
    ]
    .into();
    assert_eq!(upward_uses(&layers, &graph), ["b (bottom) uses a (top)"]);
    assert_eq!(cycles(&graph), [vec!["a".to_owned(), "b".to_owned()]]);

    let doc = "1. **top**: `a`\n2. **bottom**: [`b`] and\n   [`mod@c`]\n\nText `d`.\n";
    let listed = listed_layers(doc, "");
    assert_eq!(listed, layers);
}

#[test]
fn no_module_uses_a_higher_layer() {
    let layers = layers_of_the_library();
    let graph = module_graph(&core_src(), &layers);
    let wrong = upward_uses(&layers, &graph);
    assert!(
        wrong.is_empty(),
        "imports pointing up:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn there_are_no_import_cycles() {
    let layers = layers_of_the_library();
    let found = cycles(&module_graph(&core_src(), &layers));
    assert!(found.is_empty(), "import cycles: {found:?}");
}

#[test]
fn every_module_file_of_the_library_is_in_a_layer() {
    let layers = layers_of_the_library();
    let declared: BTreeSet<&str> = layers
        .iter()
        .flat_map(|l| &l.modules)
        .map(String::as_str)
        .collect();
    let mut strays = Vec::new();
    for entry in fs::read_dir(core_src()).unwrap() {
        let path = entry.unwrap().path();
        let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        let module = path.extension().is_some_and(|e| e == "rs") || path.is_dir();
        if module && stem != "lib" && !declared.contains(stem) {
            strays.push(path.display().to_string());
        }
    }
    assert!(strays.is_empty(), "modules in no layer: {strays:?}");
}

#[test]
fn lib_rs_and_the_architecture_doc_name_the_same_layers() {
    let layers = layers_of_the_library();
    let lib_doc = listed_layers(
        &fs::read_to_string(core_src().join("lib.rs")).unwrap(),
        "//!",
    );
    assert_eq!(lib_doc, layers, "the layer list of lib.rs's doc comment");
    let doc = fs::read_to_string(root().join("docs/architecture.md")).unwrap();
    let section = doc
        .split("\n## ")
        .find(|s| s.starts_with("Layers"))
        .expect("docs/architecture.md has a `## Layers` section");
    assert_eq!(
        listed_layers(section, ""),
        layers,
        "the layers of docs/architecture.md"
    );
}

#[test]
fn the_architecture_doc_opens_with_the_module_tree() {
    let doc = fs::read_to_string(root().join("docs/architecture.md")).unwrap();
    let tree = doc
        .split("```")
        .nth(1)
        .expect("docs/architecture.md opens with a fenced tree");
    let before = doc.split("```").next().unwrap();
    assert!(
        before.lines().filter(|l| !l.trim().is_empty()).count() <= 4,
        "the tree comes first, after a short introduction"
    );
    let named: BTreeSet<&str> = tree
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(|w| w.trim_end_matches(['/', ':']).trim_end_matches(".rs"))
        .collect();
    let mut missing = Vec::new();
    for layer in layers_of_the_library() {
        missing.extend(
            layer
                .modules
                .into_iter()
                .filter(|m| !named.contains(m.as_str())),
        );
    }
    for file in rust_files(&core_src().join("hooks")) {
        let stem = file.file_stem().unwrap().to_str().unwrap().to_owned();
        if stem != "mod" && !is_test_file(&file) && !named.contains(stem.as_str()) {
            missing.push(format!("hooks::{stem}"));
        }
    }
    for crate_name in ["preload-core", "preload-cli"] {
        if !named.contains(crate_name) {
            missing.push(crate_name.to_owned());
        }
    }
    assert!(
        missing.is_empty(),
        "not in the tree of docs/architecture.md: {missing:?}"
    );
}

fn library_sources() -> Vec<PathBuf> {
    let mut files = rust_files(&core_src());
    files.extend(rust_files(&root().join("crates/preload-cli/src")));
    files.retain(|f| !is_test_file(f));
    files
}

#[test]
fn every_module_says_first_what_it_owns() {
    let mut silent = Vec::new();
    for file in library_sources() {
        let text = fs::read_to_string(&file).unwrap();
        let first = text.lines().next().unwrap_or("");
        let said = first
            .strip_prefix("//! ")
            .is_some_and(|s| s.split_whitespace().count() >= 3);
        if !said {
            silent.push(file.display().to_string());
        }
    }
    assert!(
        silent.is_empty(),
        "modules without a first `//!` line: {silent:?}"
    );
}

#[test]
fn source_files_stay_small() {
    let long: Vec<String> = library_sources()
        .into_iter()
        .filter_map(|file| {
            let lines = fs::read_to_string(&file).unwrap().lines().count();
            (lines > MAX_FILE_LINES).then(|| format!("{} ({lines} lines)", file.display()))
        })
        .collect();
    assert!(
        long.is_empty(),
        "longer than {MAX_FILE_LINES} lines (move a mechanism down, or the tests to a sibling \
         file): {long:?}"
    );
}

/// The state keys of `fields.rs` written in camelCase (the others are common words that also
/// name tool inputs and payload fields).
fn state_keys() -> BTreeSet<String> {
    let text = fs::read_to_string(core_src().join("fields.rs")).unwrap();
    text.lines()
        .filter(|l| l.trim_start().starts_with("pub const "))
        .filter_map(|l| l.split('"').nth(1))
        .filter(|key| key.chars().any(|c| c.is_ascii_uppercase()))
        .map(str::to_owned)
        .collect()
}

#[test]
fn state_keys_are_spelled_only_in_fields() {
    let keys = state_keys();
    assert!(keys.contains("preloadedFiles") && keys.contains("pendingAllowInjections"));
    let mut spelled = Vec::new();
    for file in library_sources() {
        if file.ends_with("fields.rs") {
            continue;
        }
        let code = code_of(&fs::read_to_string(&file).unwrap());
        for (n, line) in code.lines().enumerate() {
            for literal in line.split('"').skip(1).step_by(2) {
                if keys.contains(literal) {
                    spelled.push(format!("{}:{}: \"{literal}\"", file.display(), n + 1));
                }
            }
        }
    }
    assert!(
        spelled.is_empty(),
        "state keys spelled outside fields.rs:\n{}",
        spelled.join("\n")
    );
}

/// The hook binaries never link the command line: only `preload` itself runs `preload_cli`;
/// the wiring table every binary reads lives in the library.
#[test]
fn hook_binaries_never_link_the_command_line() {
    let hooks = root().join("hooks");
    let offenders: Vec<String> = rust_files(&hooks)
        .into_iter()
        .filter(|p| p.file_name().is_some_and(|n| n != "preload.rs"))
        .filter(|p| code_of(&fs::read_to_string(p).unwrap()).contains("preload_cli"))
        .map(|p| p.display().to_string())
        .collect();
    assert!(
        offenders.is_empty(),
        "hook binaries that use preload_cli: {offenders:?}"
    );
}
