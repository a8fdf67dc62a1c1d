//! What the generated code costs rustc: each size's generated `toolset.rs` compiled alone, as
//! a library crate against the `toolgate` this benchmark was built with (the rlib in its own
//! `deps` folder), with cargo's dev and release flags, next to an empty crate that only links
//! `toolgate` (rustc's start and reading toolgate's metadata). Scratch files go to
//! `target/bench-scale/`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use toolgate_benches::harness::Samples;
use toolgate_benches::scale::Size;

/// A set of rustc flags.
#[derive(Debug, Clone, Copy)]
pub struct Flags {
    /// `dev` or `release`.
    pub name: &'static str,
    /// The codegen flags cargo passes for that profile (defaults, no incremental state).
    pub args: &'static [&'static str],
}

/// cargo's default dev and release profiles.
pub const FLAGS: [Flags; 2] = [
    Flags {
        name: "dev",
        args: &[
            "-C",
            "opt-level=0",
            "-C",
            "debuginfo=2",
            "-C",
            "codegen-units=256",
        ],
    },
    Flags {
        name: "release",
        args: &[
            "-C",
            "opt-level=3",
            "-C",
            "codegen-units=16",
            "-C",
            "embed-bitcode=no",
        ],
    },
];

/// Where the rlibs are and which `toolgate` to link.
pub struct Rustc {
    deps: PathBuf,
    toolgate: PathBuf,
    work: PathBuf,
    /// `rustc -V`, to compare with the compiler that built the benchmark.
    pub version: String,
}

impl Rustc {
    /// Finds the `toolgate` rlib next to this benchmark binary (the newest, when several builds
    /// left one).
    pub fn find() -> Result<Self, String> {
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let deps = exe
            .parent()
            .ok_or("the benchmark binary has no folder")?
            .to_path_buf();
        let toolgate = std::fs::read_dir(&deps)
            .map_err(|e| format!("{}: {e}", deps.display()))?
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("libtoolgate-") && n.ends_with(".rlib"))
            })
            .max_by_key(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok())
            .ok_or_else(|| format!("no libtoolgate-*.rlib in {}", deps.display()))?;
        let work = toolgate_benches::report::results_dir()
            .parent()
            .map_or_else(|| PathBuf::from("target"), Path::to_path_buf)
            .join("bench-scale");
        let version = Command::new("rustc")
            .arg("-V")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .map_err(|e| format!("rustc: {e}"))?;
        Ok(Self {
            deps,
            toolgate,
            work,
            version,
        })
    }

    /// Writes the crate for `size` (`None`: the empty crate) and returns its root file.
    fn krate(&self, size: Option<&Size>) -> Result<(String, PathBuf), String> {
        let name = size.map_or_else(|| "empty".to_string(), |s| format!("n{}", s.tools));
        let dir = self.work.join(&name);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let body = match size {
            Some(s) => format!(
                "pub mod toolset {{\n    include!({:?});\n}}\n",
                s.file("toolset.rs")
            ),
            None => "pub use toolgate;\n".to_string(),
        };
        let root = dir.join("lib.rs");
        std::fs::write(&root, body).map_err(|e| format!("{}: {e}", root.display()))?;
        Ok((name, root))
    }

    /// Compiles one crate once; its wall time in seconds.
    fn compile(&self, name: &str, root: &Path, flags: &Flags) -> Result<f64, String> {
        let out = self.work.join(name).join(flags.name);
        std::fs::create_dir_all(&out).map_err(|e| e.to_string())?;
        let mut extern_arg = std::ffi::OsString::from("toolgate=");
        extern_arg.push(&self.toolgate);
        let mut dep_arg = std::ffi::OsString::from("dependency=");
        dep_arg.push(&self.deps);
        let start = Instant::now();
        let status = Command::new("rustc")
            .args([
                "--edition",
                "2024",
                "--crate-type",
                "lib",
                "--cap-lints",
                "allow",
            ])
            .args(["--crate-name", &format!("scale_build_{name}")])
            .args(["--emit", "dep-info,metadata,link"])
            .args(flags.args)
            .arg("--extern")
            .arg(extern_arg)
            .arg("-L")
            .arg(dep_arg)
            .arg("--out-dir")
            .arg(&out)
            .arg(root)
            .output()
            .map_err(|e| format!("rustc: {e}"))?;
        let secs = start.elapsed().as_secs_f64();
        if !status.status.success() {
            return Err(format!(
                "rustc {name} ({}) failed: {}",
                flags.name,
                String::from_utf8_lossy(&status.stderr)
                    .lines()
                    .take(8)
                    .collect::<Vec<_>>()
                    .join(" / ")
            ));
        }
        Ok(secs)
    }

    /// `rounds` rounds, each compiling the empty crate and every size once with each flag set
    /// (the order rotating by round). Returns, per flag set, the empty crate's times and each
    /// size's.
    pub fn measure(
        &self,
        sizes: &[Size],
        rounds: usize,
    ) -> Result<Vec<(Flags, Samples, Vec<Samples>)>, String> {
        let mut crates = vec![self.krate(None)?];
        for s in sizes {
            crates.push(self.krate(Some(s))?);
        }
        let mut times = vec![vec![Samples::default(); crates.len()]; FLAGS.len()];
        for round in 0..rounds {
            for (f, flags) in FLAGS.iter().enumerate() {
                for k in 0..crates.len() {
                    let i = (k + round) % crates.len();
                    let (name, root) = &crates[i];
                    times[f][i].push(self.compile(name, root, flags)?);
                }
            }
        }
        Ok(FLAGS
            .iter()
            .zip(times)
            .map(|(flags, mut t)| {
                let empty = t.remove(0);
                (*flags, empty, t)
            })
            .collect())
    }
}
