//! The shape of the code, checked: the library's five layers as `lib.rs` declares them, each a
//! folder; imports that point down only; no import cycles between sibling modules, in the
//! library and in the command line; the same layers in `docs/architecture.md` and its tree
//! naming every module; `unsafe` in one system module only; a first doc line on every module;
//! files small enough to read in one sitting; and state keys spelled only in `fields.rs`.
//!
//! The checks read the source as text (no build step): the paths code names (`crate::…`,
//! `super::…`, `self::…`, a child module's name), outside comments and unit tests. Each check
//! is tried on a small made-up input first, so a check that could never fail fails here.

mod source;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::PathBuf;

use source::{
    ModPath, backticked, code_of, crate_modules, declared_mods, is_test_file, rust_files,
    sibling_cycles, uses,
};

/// The longest a source file may grow (lines, tests in sibling files excluded).
const MAX_FILE_LINES: usize = 450;

/// The names the library's root re-exports, with the module each comes from.
const REEXPORTS: [(&str, &[&str]); 5] = [
    ("Context", &["mechanisms", "context"]),
    ("HookInput", &["primitives", "input"]),
    ("HookError", &["pipeline", "runner"]),
    ("HookEvent", &["pipeline", "runner"]),
    ("HookOutput", &["pipeline", "runner"]),
];

/// The one module allowed `unsafe` (and everything under it).
const SYSTEM_MODULE: [&str; 2] = ["primitives", "system"];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn core_src() -> PathBuf {
    root().join("crates/preload-core/src")
}

fn cli_src() -> PathBuf {
    root().join("crates/preload-cli/src")
}

/// One layer of the library: its number (1 is the top), its name (its folder) and its
/// modules (the folder's public modules, and the layer itself when its root file holds code
/// of its own).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Layer {
    number: usize,
    name: String,
    modules: BTreeSet<String>,
}

/// The layers `lib.rs` declares: a `// Layer N: name.` line, then `pub mod name;`.
fn declared_layers(lib_rs: &str) -> Vec<(usize, String)> {
    let mut layers = Vec::new();
    let mut pending: Option<(usize, String)> = None;
    for line in lib_rs.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("// Layer ") {
            let (number, name) = rest.split_once(':').expect("`// Layer N: name.`");
            pending = Some((
                number.trim().parse().expect("a layer number"),
                name.trim().trim_end_matches('.').to_owned(),
            ));
        } else if let Some(module) = line
            .strip_prefix("pub mod ")
            .and_then(|m| m.strip_suffix(';'))
        {
            let (number, name) = pending
                .take()
                .expect("a `pub mod` line after a `// Layer` line");
            assert_eq!(module, name, "layer {number} is the folder of its name");
            layers.push((number, name));
        }
    }
    layers
}

/// The modules of a layer from its root file's code.
fn layer_modules(name: &str, root_code: &str) -> BTreeSet<String> {
    let declared = declared_mods(root_code);
    let mut modules: BTreeSet<String> = declared
        .iter()
        .filter(|(public, _)| *public)
        .map(|(_, m)| m.clone())
        .collect();
    let own_code = root_code.lines().map(str::trim).any(|line| {
        !line.is_empty()
            && !line.starts_with("pub mod ")
            && !line.starts_with("#[")
            && !line.starts_with("//")
    });
    if own_code {
        modules.insert(name.to_owned());
    }
    modules
}

fn layers_of_the_library() -> Vec<Layer> {
    let layers: Vec<Layer> =
        declared_layers(&fs::read_to_string(core_src().join("lib.rs")).unwrap())
            .into_iter()
            .map(|(number, name)| {
                let code =
                    code_of(&fs::read_to_string(core_src().join(format!("{name}.rs"))).unwrap());
                let modules = layer_modules(&name, &code);
                Layer {
                    number,
                    name,
                    modules,
                }
            })
            .collect();
    assert!(layers.len() >= 3, "lib.rs declares no layers: {layers:?}");
    layers
}

/// The layer and the library module a module of the crate belongs to: its layer's public
/// module it lies in, else the layer's own root (`None` for the crate root).
fn library_module<'a>(layers: &'a [Layer], path: &ModPath) -> Option<(&'a Layer, String)> {
    let layer = layers.iter().find(|l| path.first() == Some(&l.name))?;
    let module = path
        .get(1)
        .filter(|m| layer.modules.contains(*m) && **m != layer.name)
        .cloned()
        .unwrap_or_else(|| layer.name.clone());
    Some((layer, module))
}

/// Which module uses which, for a crate: every module file with the modules it names.
fn use_graph(
    modules: &BTreeMap<ModPath, String>,
    reexports: &[(&str, &[&str])],
) -> BTreeMap<ModPath, BTreeSet<ModPath>> {
    let known: BTreeSet<ModPath> = modules.keys().cloned().collect();
    modules
        .iter()
        .map(|(at, code)| (at.clone(), uses(at, code, &known, reexports)))
        .collect()
}

/// Every use of a module of a higher layer (a smaller number), as `user -> used` lines.
fn upward_uses(layers: &[Layer], graph: &BTreeMap<ModPath, BTreeSet<ModPath>>) -> Vec<String> {
    let mut wrong = BTreeSet::new();
    for (user, used) in graph {
        let Some((own, own_module)) = library_module(layers, user) else {
            continue;
        };
        for target in used {
            match library_module(layers, target) {
                Some((layer, module)) if layer.number < own.number => {
                    wrong.insert(format!(
                        "{own_module} ({}) uses {module} ({})",
                        own.name, layer.name
                    ));
                }
                _ => {}
            }
        }
    }
    wrong.into_iter().collect()
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
        let item = line.split_once(". ").and_then(|(n, rest)| {
            let number = n.parse().ok()?;
            let rest = rest.trim_start_matches('[');
            let name_and_rest = rest
                .strip_prefix("**")
                .map(|r| r.split_once("**"))
                .or_else(|| rest.strip_prefix('`').map(|r| r.split_once('`')))??;
            Some((number, name_and_rest.0, name_and_rest.1))
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

#[test]
fn the_checks_catch_what_they_look_for() {
    let lib = "// Layer 1: top.\npub mod top;\n\n// Layer 2: bottom.\npub mod bottom;\n";
    assert_eq!(
        declared_layers(lib),
        [(1, "top".to_owned()), (2, "bottom".to_owned())]
    );
    assert_eq!(
        layer_modules("bottom", "//! Doc.\npub mod b;\npub mod c;\n"),
        ["b", "c"].map(String::from).into()
    );
    assert_eq!(
        layer_modules("bottom", "pub mod b;\nmod private;\npub struct Own;\n"),
        ["b", "bottom"].map(String::from).into()
    );

    let path = |p: &str| -> ModPath { p.split("::").map(String::from).collect() };
    let modules: BTreeSet<ModPath> = [
        "top",
        "top::a",
        "top::a::kid",
        "bottom",
        "bottom::b",
        "bottom::c",
    ]
    .map(path)
    .into();
    let code = "mod kid;\nuse crate::{top::a::X, bottom::{self, c}};\n// use crate::bottom::b;\n\
                fn f() { crate::bottom::b::g(); kid::h(); super::a::y(); }\n\
                #[cfg(test)]\n#[allow(clippy::unwrap_used)]\nmod tests {\n    use crate::q;\n}\n";
    assert_eq!(
        uses(&path("top::a"), &code_of(code), &modules, &[]),
        ["top::a::kid", "bottom", "bottom::b", "bottom::c"]
            .map(path)
            .into()
    );

    let graph: BTreeMap<ModPath, BTreeSet<ModPath>> = [
        (path("top::a"), BTreeSet::from([path("top::b::deep")])),
        (
            path("top::b::deep"),
            BTreeSet::from([path("top::a"), path("top::b")]),
        ),
        (path("top::b"), BTreeSet::from([path("top::b::deep")])),
        (path("bottom::b"), BTreeSet::from([path("top::a")])),
    ]
    .into();
    assert_eq!(sibling_cycles(&graph), ["within top: a -> b -> a"]);
    let layers = [
        Layer {
            number: 1,
            name: "top".into(),
            modules: ["a", "b"].map(String::from).into(),
        },
        Layer {
            number: 2,
            name: "bottom".into(),
            modules: ["b"].map(String::from).into(),
        },
    ];
    assert_eq!(upward_uses(&layers, &graph), ["b (bottom) uses a (top)"]);

    let doc = "1. **top**: `a`, `b`\n2. **bottom**: [`b`] and\n   [`mod@c`]\n\nText `d`.\n";
    let listed = listed_layers(doc, "");
    assert_eq!(listed[1].modules, ["b", "c"].map(String::from).into());
    assert_eq!(
        listed_layers("//! 1. [`top`]: one\n//! 2. [`bottom`]: two\n", "//!")
            .iter()
            .map(|l| (l.number, l.name.clone()))
            .collect::<Vec<_>>(),
        [(1, "top".to_owned()), (2, "bottom".to_owned())]
    );
}

#[test]
fn no_module_uses_a_higher_layer() {
    let layers = layers_of_the_library();
    let graph = use_graph(&crate_modules(&core_src()), &REEXPORTS);
    let wrong = upward_uses(&layers, &graph);
    assert!(
        wrong.is_empty(),
        "imports pointing up:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn there_are_no_import_cycles_in_the_library_or_the_command_line() {
    let library = sibling_cycles(&use_graph(&crate_modules(&core_src()), &REEXPORTS));
    assert!(
        library.is_empty(),
        "import cycles in the library: {library:#?}"
    );
    let cli = sibling_cycles(&use_graph(&crate_modules(&cli_src()), &[]));
    assert!(
        cli.is_empty(),
        "import cycles in the command line: {cli:#?}"
    );
}

#[test]
fn every_module_file_of_the_library_is_in_a_layer() {
    let layers = layers_of_the_library();
    let strays: Vec<String> = crate_modules(&core_src())
        .into_keys()
        .filter(|path| !path.is_empty() && library_module(&layers, path).is_none())
        .map(|path| path.join("::"))
        .collect();
    assert!(strays.is_empty(), "modules in no layer: {strays:?}");
}

#[test]
fn lib_rs_and_the_architecture_doc_name_the_same_layers() {
    let layers = layers_of_the_library();
    let names = |layers: &[Layer]| -> Vec<(usize, String)> {
        layers.iter().map(|l| (l.number, l.name.clone())).collect()
    };
    let lib_doc = listed_layers(
        &fs::read_to_string(core_src().join("lib.rs")).unwrap(),
        "//!",
    );
    assert_eq!(
        names(&lib_doc),
        names(&layers),
        "the layer list of lib.rs's doc comment"
    );
    let doc = fs::read_to_string(root().join("docs/architecture.md")).unwrap();
    let section = doc
        .split("\n## ")
        .find(|s| s.starts_with("Layers"))
        .expect("docs/architecture.md has a `## Layers` section");
    assert_eq!(
        listed_layers(section, ""),
        layers,
        "the layers of docs/architecture.md, each with its modules"
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
            std::iter::once(layer.name)
                .chain(layer.modules)
                .filter(|m| !named.contains(m.as_str())),
        );
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

/// Every `unsafe` of the library lives in its one system module, which says so; the count
/// of `unsafe` blocks and functions there is the one docs/architecture.md states.
#[test]
fn unsafe_lives_in_the_system_module_only() {
    let modules = crate_modules(&core_src());
    let mut outside = Vec::new();
    let mut count = 0;
    for (path, code) in &modules {
        let here = code.matches("unsafe ").count() + code.matches("unsafe(").count();
        if path.starts_with(&SYSTEM_MODULE.map(String::from)) {
            count += here;
        } else if here > 0 {
            outside.push(path.join("::"));
        }
    }
    assert!(
        outside.is_empty(),
        "`unsafe` outside the system module: {outside:?}"
    );
    let doc = fs::read_to_string(root().join("docs/architecture.md")).unwrap();
    let stated = format!("{count} uses of `unsafe`");
    assert!(
        doc.contains(&stated),
        "docs/architecture.md does not say \"{stated}\""
    );
}

fn library_sources() -> Vec<PathBuf> {
    let mut files = rust_files(&core_src());
    files.extend(rust_files(&cli_src()));
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
    let long = longer_than(library_sources(), MAX_FILE_LINES);
    assert!(
        long.is_empty(),
        "longer than {MAX_FILE_LINES} lines (move a mechanism down, or the tests to a sibling \
         file): {long:?}"
    );
}

/// The files of `files` longer than `max` lines, each with its length.
fn longer_than(files: Vec<PathBuf>, max: usize) -> Vec<String> {
    files
        .into_iter()
        .filter_map(|file| {
            let lines = fs::read_to_string(&file).unwrap().lines().count();
            (lines > max).then(|| format!("{} ({lines} lines)", file.display()))
        })
        .collect()
}

/// The most lines a test file may have: a suite that grows becomes a folder of files, each
/// named after what it tests.
const MAX_TEST_FILE_LINES: usize = 800;

#[test]
fn test_files_stay_small() {
    let long = longer_than(rust_files(&root().join("tests")), MAX_TEST_FILE_LINES);
    assert!(
        long.is_empty(),
        "test files longer than {MAX_TEST_FILE_LINES} lines (split them by what they test): \
         {long:?}"
    );
}

/// The state keys of `fields.rs` written in camelCase (the others are common words that also
/// name tool inputs and payload fields).
fn state_keys() -> BTreeSet<String> {
    let text = fs::read_to_string(core_src().join("state/fields.rs")).unwrap();
    text.lines()
        .filter(|l| {
            let l = l.trim_start();
            l.starts_with("pub const ") || l.starts_with("pub(crate) const ")
        })
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

/// The value of `key` in each `[[bin]]` of Cargo.toml, in order (`None` where it is missing).
fn cargo_bins(key: &str) -> Vec<Option<String>> {
    let manifest = fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let prefix = format!("{key} = \"");
    manifest
        .split("[[bin]]")
        .skip(1)
        .map(|bin| {
            bin.lines()
                .find_map(|l| l.strip_prefix(prefix.as_str())?.strip_suffix('"'))
                .map(str::to_owned)
        })
        .collect()
}

/// One shipping shape: every binary cargo builds is the program users run (`make release`
/// links one `preload` under every hook's name), `preload_cli::multi_call`, which runs a hook
/// under the hook's name. No binary of its own for a hook, which would be a second shape.
#[test]
fn every_binary_is_the_one_program_users_run() {
    let other: Vec<String> = cargo_bins("path")
        .into_iter()
        .map(|path| path.expect("every [[bin]] names its path"))
        .filter(|path| {
            let code = code_of(&fs::read_to_string(root().join(path)).unwrap());
            let code: String = code.split_whitespace().collect();
            code != "#![no_main]preload_core::hook_entry!(preload_cli::multi_call);"
        })
        .collect();
    assert!(
        other.is_empty(),
        "binaries that are not the one program: {other:?}"
    );
}

/// The list of hooks is spelled once, in the library's table of hooks: the binaries cargo
/// builds (`[[bin]]`, which cargo needs spelled out) are exactly the table's.
#[test]
fn cargo_builds_the_binaries_of_the_table_of_hooks() {
    let built: BTreeSet<String> = cargo_bins("name").into_iter().flatten().collect();
    let table: BTreeSet<String> = preload_core::policies::BINARIES
        .into_iter()
        .map(str::to_owned)
        .collect();
    assert_eq!(
        built, table,
        "Cargo.toml's [[bin]] names and the table of hooks"
    );
}
