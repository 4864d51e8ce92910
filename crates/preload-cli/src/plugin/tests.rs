//! The plugin's documents and its launcher, checked without running a hook.

use super::*;
use crate::install::wiring::{SESSION_START_CHUNKS, WIRING};

#[test]
fn the_once_a_prompt_events_go_through_the_launcher_and_the_tool_calls_straight_to_links() {
    let doc = hooks_document();
    let mut commands = 0;
    for (event, groups) in doc["hooks"].as_object().unwrap() {
        let dir = if LAUNCHED_EVENTS.contains(&event.as_str()) {
            PLUGIN_BIN
        } else {
            PLUGIN_LINKS
        };
        for group in groups.as_array().unwrap() {
            for handler in group["hooks"].as_array().unwrap() {
                let command = handler["command"].as_str().unwrap();
                let name = command
                    .strip_prefix(&format!("{dir}/"))
                    .unwrap_or_else(|| panic!("{event}: {command} is not under {dir}"));
                assert!(BINARIES.contains(&name), "{command}");
                assert!(handler["args"].is_array(), "exec form: {handler}");
                commands += 1;
            }
        }
    }
    let rows = WIRING.iter().filter(|w| !w.chunked).count();
    assert_eq!(commands, rows + SESSION_START_CHUNKS);
    for event in LAUNCHED_EVENTS {
        assert!(doc["hooks"].get(*event).is_some(), "{event} is wired");
    }
    assert!(doc["hooks"].get("PreToolUse").is_some());
}

#[test]
fn the_launcher_knows_every_platform_and_every_hook() {
    let text = launcher();
    for placeholder in ["@PLATFORMS@", "@HOOKS@"] {
        assert!(!text.contains(placeholder), "{placeholder} is left: {text}");
    }
    for p in PLATFORMS {
        for uname in p.uname {
            assert!(
                text.contains(&format!("\"{uname}\"")),
                "{uname} is not matched"
            );
        }
    }
    for name in BINARIES {
        assert!(text.contains(&format!(" {name}")), "{name} is not linked");
    }
}

#[test]
fn this_platform_is_a_release_platform_here() {
    // The machines the suites run on are all release platforms.
    let p = this_platform().unwrap();
    assert!(p.target.starts_with(std::env::consts::ARCH), "{p:?}");
}

#[test]
fn the_marketplace_lists_the_directory_as_its_plugin() {
    let m = marketplace();
    assert_eq!(m["plugins"][0]["name"], manifest()["name"]);
    assert_eq!(m["plugins"][0]["source"], "./");
    assert_eq!(m["plugins"][0]["version"], manifest()["version"]);
}

#[test]
fn an_occupied_directory_is_refused_and_left_alone() {
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("notes.txt"), "mine").unwrap();
    let binaries = vec![(&PLATFORMS[0], tmp.path().join("notes.txt"))];
    let err = write_plugin(tmp.path(), &binaries).unwrap_err();
    assert!(matches!(err, PluginError::Occupied { .. }), "{err}");
    assert_eq!(fs::read_dir(tmp.path()).unwrap().count(), 1);
}

#[test]
fn a_dist_directory_gives_the_platforms_it_holds_of_this_version() {
    let tmp = tempfile::tempdir().unwrap();
    let version = env!("CARGO_PKG_VERSION");
    for (dir, target) in [
        (version, "aarch64-apple-darwin"),
        (version, "x86_64-unknown-linux-musl"),
        ("0.0.0-other", "aarch64-unknown-linux-musl"),
    ] {
        let bin = tmp.path().join(format!("preload-hooks-{dir}-{target}/bin"));
        fs::create_dir_all(&bin).unwrap();
        fs::write(bin.join("preload"), "binary").unwrap();
    }
    let found: Vec<&str> = from_dist(tmp.path())
        .unwrap()
        .iter()
        .map(|(p, _)| p.name)
        .collect();
    assert_eq!(found, ["linux-x64", "darwin-arm64"]);
    let empty = tempfile::tempdir().unwrap();
    assert!(matches!(
        from_dist(empty.path()),
        Err(PluginError::EmptyDist { .. })
    ));
}
