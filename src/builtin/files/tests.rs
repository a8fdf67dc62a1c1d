use std::os::unix::fs::symlink;

use super::*;

/// A temp dir holding `root/` (the shared directory) and `outside/` (must stay unreachable).
struct Fixture {
    _tmp: tempfile::TempDir,
    settings: FilesSettings,
    root: PathBuf,
    outside: PathBuf,
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(root.join("sub/deeper")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(root.join("hello.txt"), "hello, world\n").unwrap();
    std::fs::write(root.join("sub/b.md"), "# B\n").unwrap();
    std::fs::write(root.join("sub/deeper/c.txt"), "c").unwrap();
    std::fs::write(root.join("bom.txt"), "\u{feff}with bom").unwrap();
    std::fs::write(root.join("binary.bin"), [0x89, b'P', b'N', b'G', 0, 1, 2]).unwrap();
    std::fs::write(root.join("latin1.txt"), [b'c', b'a', b'f', 0xe9]).unwrap();
    std::fs::write(root.join("big.txt"), "x".repeat(5000)).unwrap();
    std::fs::write(outside.join("secret.txt"), "secret").unwrap();
    symlink("/etc", root.join("etc_link")).unwrap();
    symlink("/etc/hostname", root.join("hostname_link")).unwrap();
    symlink("../outside/secret.txt", root.join("secret_link")).unwrap();
    symlink("../outside", root.join("outside_dir_link")).unwrap();
    symlink("sub/b.md", root.join("inner_link")).unwrap();
    symlink("sub", root.join("inner_dir_link")).unwrap();
    symlink(root.join("hello.txt"), root.join("absolute_inner_link")).unwrap();
    symlink("missing", root.join("dangling")).unwrap();
    let settings = FilesSettings {
        root: Some(root.clone()),
        max_bytes: 4096,
    };
    Fixture {
        _tmp: tmp,
        settings,
        root,
        outside,
    }
}

fn read(f: &Fixture, path: &str) -> Result<ReadFileResult, FilesError> {
    read_file(
        &f.settings,
        ReadFileArgs {
            path: path.into(),
            max_bytes: None,
        },
    )
}

fn list(f: &Fixture, path: &str) -> Result<ListDirResult, FilesError> {
    list_dir(&f.settings, ListDirArgs { path: path.into() })
}

#[test]
fn reads_text_files() {
    let f = fixture();
    let r = read(&f, "hello.txt").unwrap();
    assert_eq!(r.text, "hello, world\n");
    assert_eq!(r.bytes, 13);
    assert_eq!(r.path, "hello.txt");
    assert_eq!(read(&f, "sub/deeper/c.txt").unwrap().text, "c");
    assert_eq!(read(&f, "./sub/../sub/b.md").unwrap().text, "# B\n");
    assert_eq!(read(&f, "bom.txt").unwrap().text, "with bom");
}

#[test]
fn refuses_escapes() {
    let f = fixture();
    assert!(f.outside.join("secret.txt").exists());
    for path in [
        "../outside/secret.txt",
        "sub/../../outside/secret.txt",
        "..",
        "/etc/passwd",
        "/",
        "etc_link/passwd",
        "etc_link",
        "hostname_link",
        "secret_link",
        "outside_dir_link/secret.txt",
        "absolute_inner_link",
    ] {
        let err = read(&f, path).unwrap_err();
        assert!(matches!(err, FilesError::Escape { .. }), "{path}: {err:?}");
        assert!(!err.to_string().contains(f.root.to_str().unwrap()));
    }
    for path in ["..", "/etc", "etc_link", "outside_dir_link", "sub/../.."] {
        let err = list(&f, path).unwrap_err();
        assert!(matches!(err, FilesError::Escape { .. }), "{path}: {err:?}");
    }
}

#[test]
fn follows_relative_symlinks_inside_the_root() {
    let f = fixture();
    assert_eq!(read(&f, "inner_link").unwrap().text, "# B\n");
    assert_eq!(read(&f, "inner_dir_link/b.md").unwrap().text, "# B\n");
    let names: Vec<_> = list(&f, "inner_dir_link")
        .unwrap()
        .entries
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(names, ["b.md", "deeper"]);
}

#[test]
fn typed_errors() {
    let f = fixture();
    let err = read(&f, "nope.txt").unwrap_err();
    assert!(matches!(err, FilesError::NotFound { .. }), "{err:?}");
    assert_eq!(err.to_string(), "nope.txt: no such file or directory");
    assert!(matches!(
        read(&f, "dangling"),
        Err(FilesError::NotFound { .. })
    ));
    assert!(matches!(
        read(&f, "hello.txt/x"),
        Err(FilesError::NotFound { .. })
    ));
    assert!(matches!(
        read(&f, "binary.bin"),
        Err(FilesError::NotText { .. })
    ));
    assert!(matches!(
        read(&f, "latin1.txt"),
        Err(FilesError::NotText { .. })
    ));
    assert!(matches!(read(&f, "sub"), Err(FilesError::NotAFile { .. })));
    assert!(matches!(read(&f, "."), Err(FilesError::NotAFile { .. })));
    assert!(matches!(read(&f, ""), Err(FilesError::NotAFile { .. })));
    let err = read(&f, "big.txt").unwrap_err();
    assert!(
        matches!(
            err,
            FilesError::TooLarge {
                size: 5000,
                max: 4096,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(matches!(list(&f, "nope"), Err(FilesError::NotFound { .. })));
    assert!(matches!(
        list(&f, "hello.txt"),
        Err(FilesError::NotADirectory { .. })
    ));
}

#[test]
fn max_bytes_argument_only_lowers_the_limit() {
    let f = fixture();
    let args = |max| ReadFileArgs {
        path: "hello.txt".into(),
        max_bytes: Some(max),
    };
    assert!(matches!(
        read_file(&f.settings, args(5)),
        Err(FilesError::TooLarge { max: 5, .. })
    ));
    assert!(read_file(&f.settings, args(13)).is_ok());
    let big = ReadFileArgs {
        path: "big.txt".into(),
        max_bytes: Some(1 << 30),
    };
    assert!(matches!(
        read_file(&f.settings, big),
        Err(FilesError::TooLarge { max: 4096, .. })
    ));
}

#[test]
fn special_files_are_not_read() {
    let f = fixture();
    let fifo = f.root.join("fifo");
    let status = std::process::Command::new("mkfifo").arg(&fifo).status();
    if !status.is_ok_and(|s| s.success()) {
        return; // no mkfifo here
    }
    assert!(matches!(read(&f, "fifo"), Err(FilesError::NotAFile { .. })));
    let entry = list(&f, ".")
        .unwrap()
        .entries
        .into_iter()
        .find(|e| e.name == "fifo")
        .unwrap();
    assert_eq!(entry.kind, EntryKind::Other);
}

#[test]
fn lists_sorted_entries() {
    let f = fixture();
    let r = list_dir(&f.settings, ListDirArgs::default()).unwrap();
    assert_eq!(r.path, ".");
    assert!(!r.truncated);
    let names: Vec<_> = r.entries.iter().map(|e| e.name.as_str()).collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
    let get = |n: &str| r.entries.iter().find(|e| e.name == n).unwrap().clone();
    assert_eq!(get("hello.txt").kind, EntryKind::File);
    assert_eq!(get("hello.txt").size, Some(13));
    assert_eq!(get("sub").kind, EntryKind::Dir);
    assert_eq!(get("sub").size, None);
    assert_eq!(get("etc_link").kind, EntryKind::Symlink);
    assert_eq!(get("dangling").kind, EntryKind::Symlink);
    assert!(!names.contains(&"secret.txt"));

    let json = serde_json::to_value(list(&f, "sub").unwrap()).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"path": "sub", "truncated": false, "entries": [
            {"name": "b.md", "kind": "file", "size": 4},
            {"name": "deeper", "kind": "dir"},
        ]})
    );
}

#[test]
fn caps_huge_directories() {
    let f = fixture();
    let dir = f.root.join("many");
    std::fs::create_dir(&dir).unwrap();
    for i in 0..MAX_DIR_ENTRIES + 5 {
        std::fs::write(dir.join(format!("f{i:05}")), "").unwrap();
    }
    let r = list(&f, "many").unwrap();
    assert!(r.truncated);
    assert_eq!(r.entries.len(), MAX_DIR_ENTRIES);
    assert_eq!(r.entries[0].name, "f00000");
    assert_eq!(r.entries.last().unwrap().name, "f00999");
}

#[test]
fn missing_root_is_an_io_error_without_its_location() {
    let settings = FilesSettings {
        root: Some(PathBuf::from("/nonexistent/toolgate-root")),
        max_bytes: 10,
    };
    let err = list_dir(&settings, ListDirArgs::default()).unwrap_err();
    assert!(matches!(err, FilesError::Io { .. }), "{err:?}");
    assert!(!err.to_string().contains("toolgate-root"), "{err}");
}

#[test]
fn args_are_strict_and_defaulted() {
    let a: ListDirArgs = serde_json::from_str("{}").unwrap();
    assert_eq!(a.path, ".");
    assert!(serde_json::from_str::<ListDirArgs>(r#"{"dir":"x"}"#).is_err());
    let a: ReadFileArgs = serde_json::from_str(r#"{"path":"a"}"#).unwrap();
    assert_eq!(a.max_bytes, None);
    assert!(serde_json::from_str::<ReadFileArgs>(r#"{"path":"a","offset":1}"#).is_err());
}

#[test]
fn without_a_root_nothing_is_shared() {
    let settings = FilesSettings::default();
    assert_eq!(settings.root, None);
    for path in ["hello.txt", "/etc/hostname", "."] {
        let e = read_file(
            &settings,
            ReadFileArgs {
                path: path.into(),
                max_bytes: None,
            },
        )
        .unwrap_err();
        assert!(matches!(e, FilesError::NoRoot { .. }), "{e:?}");
        assert!(e.to_string().contains("settings.files.root"), "{e}");
        let e = list_dir(&settings, ListDirArgs { path: path.into() }).unwrap_err();
        assert!(matches!(e, FilesError::NoRoot { .. }), "{e:?}");
    }
    let e = crate::ToolError::from(FilesError::NoRoot { path: "x".into() });
    assert_eq!(e.kind(), crate::ErrorKind::PermissionDenied);
}

#[test]
fn list_dir_of_a_file_or_below_one() {
    let f = fixture();
    assert!(matches!(
        list(&f, "hello.txt"),
        Err(FilesError::NotADirectory { .. })
    ));
    assert!(matches!(
        list(&f, "hello.txt/x"),
        Err(FilesError::NotFound { .. })
    ));
    assert!(matches!(list(&f, "nope"), Err(FilesError::NotFound { .. })));
    assert!(matches!(read(&f, "sub"), Err(FilesError::NotAFile { .. })));
}

/// A FIFO swapped in for a regular file while `read_file` and `list_dir` run: neither may
/// block on it (opening a FIFO for reading without O_NONBLOCK waits for a writer, forever).
/// The swap is a race (`renameat2(RENAME_EXCHANGE)` in a loop, so `swap` is always one or the
/// other), so it runs many times; each call runs on a thread of its own and one still running
/// 20 s later is taken as blocked (the FIFO is then opened for writing, which releases it, and
/// the test fails).
#[cfg(target_os = "linux")]
#[test]
fn a_fifo_swapped_in_never_blocks() {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt as _;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    let f = fixture();
    let fifo = f.root.join("swap.fifo");
    let status = std::process::Command::new("mkfifo").arg(&fifo).status();
    if !status.is_ok_and(|s| s.success()) {
        return; // no mkfifo here
    }
    let target = f.root.join("swap");
    std::fs::write(&target, "text").unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = std::thread::spawn({
        let stop = stop.clone();
        let a = CString::new(target.as_os_str().as_bytes()).unwrap();
        let b = CString::new(fifo.as_os_str().as_bytes()).unwrap();
        move || {
            while !stop.load(Ordering::Relaxed) {
                // SAFETY: two NUL-terminated paths, relative to nothing (absolute).
                let r = unsafe {
                    libc::renameat2(
                        libc::AT_FDCWD,
                        a.as_ptr(),
                        libc::AT_FDCWD,
                        b.as_ptr(),
                        libc::RENAME_EXCHANGE,
                    )
                };
                assert_eq!(r, 0, "renameat2: {}", std::io::Error::last_os_error());
            }
        }
    });
    const CALLS: usize = 50_000;
    let (tx, rx) = std::sync::mpsc::channel();
    let settings = f.settings.clone();
    let reader = std::thread::spawn(move || {
        for i in 0..CALLS {
            let args = ReadFileArgs {
                path: "swap".into(),
                max_bytes: None,
            };
            if let Ok(r) = read_file(&settings, args) {
                assert_eq!(r.text, "text");
            }
            if i % 64 == 0 {
                let _ = list_dir(
                    &settings,
                    ListDirArgs {
                        path: "swap".into(),
                    },
                );
            }
            if tx.send(i).is_err() {
                return;
            }
        }
    });
    let mut done = 0;
    let blocked = loop {
        match rx.recv_timeout(std::time::Duration::from_secs(20)) {
            Ok(_) => done += 1,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break false,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => break true,
        }
    };
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();
    if blocked {
        // Release the blocked open: a writer on the FIFO, under either name.
        use std::os::unix::fs::OpenOptionsExt as _;
        for name in [&fifo, &target] {
            let _ = std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(name);
        }
    }
    let _ = reader.join();
    assert!(
        !blocked,
        "read_file or list_dir blocked on a FIFO after {done} calls"
    );
    assert_eq!(done, CALLS);
}
