//! Editor variables (`${workspaceFolder}`, `${env:NAME}`, `${input:...}`...) made toolgate's
//! `${NAME}` syntax, or their value, or an error saying why not.

use std::path::Path;

use serde_json::Value;

use super::Cx;
use crate::config::Interpolated;

impl Cx<'_> {
    pub(super) fn interpolated(&mut self, ptr: &str, raw: &str) -> Option<Interpolated> {
        let text = self.translate(ptr, raw, true)?;
        Interpolated::new(text)
            .map_err(|e| self.error(ptr, format_args!("`{}`: {e}", self.label(ptr)), None))
            .ok()
    }

    /// A string toolgate does not interpolate (`command`, `cwd`, `url`).
    pub(super) fn plain(&mut self, ptr: &str, v: &Value) -> Option<String> {
        let s = self.string(ptr, v)?;
        self.translate(ptr, s, false)
    }

    /// Editor variables to toolgate's syntax (`interpolated`), or to their value (only the
    /// workspace ones are allowed then).
    fn translate(&mut self, ptr: &str, raw: &str, interpolated: bool) -> Option<String> {
        let literal = |out: &mut String, text: &str| match interpolated {
            true => out.push_str(&text.replace('$', "$$")),
            false => out.push_str(text),
        };
        let (mut out, mut rest) = (String::with_capacity(raw.len()), raw);
        while let Some(start) = rest.find("${")
            && let Some(len) = rest[start..].find('}')
        {
            literal(&mut out, &rest[..start]);
            let inner = &rest[start + 2..start + len];
            rest = &rest[start + len + 1..];
            let basename = Path::new(&self.workspace)
                .file_name()
                .map(|f| f.to_string_lossy());
            let native = inner.split_once(":-").map_or(inner, |(name, _)| name);
            let (value, env) = match inner {
                "workspaceFolder" => (Some(self.workspace.clone()), false),
                "workspaceFolderBasename" => (basename.map(|b| b.into_owned()), false),
                "pathSeparator" | "/" => (Some(std::path::MAIN_SEPARATOR.to_string()), false),
                "userHome" => (Some("${HOME}".to_string()), true),
                _ => match inner.strip_prefix("env:") {
                    Some(name) => (is_var_name(name).then(|| format!("${{{name}}}")), true),
                    None => (is_var_name(native).then(|| format!("${{{inner}}}")), true),
                },
            };
            let (label, var) = (self.label(ptr), format!("${{{inner}}}"));
            match value {
                Some(v) if !env => literal(&mut out, &v),
                Some(v) if interpolated => out.push_str(&v),
                Some(_) => {
                    let msg =
                        format!("`{var}` in `{label}`: toolgate does not substitute it there");
                    let hint = "write the value (secrets belong in `env` or `headers`)";
                    self.error(ptr, msg, Some(hint));
                    return None;
                }
                None if inner.starts_with("input:") => {
                    let msg = format!(
                        "`{var}` in `{label}` is a VS Code prompt: toolgate cannot ask for it"
                    );
                    let hint = "use `${env:NAME}` instead, and set NAME in toolgate's environment";
                    self.error(ptr, msg, Some(hint));
                    return None;
                }
                None => {
                    let msg = format!("`{var}` in `{label}` is not supported");
                    let hint = "toolgate knows `${NAME}`, `${env:NAME}`, `${workspaceFolder}`, \
                                `${workspaceFolderBasename}`, `${userHome}`, `${pathSeparator}`";
                    self.error(ptr, msg, Some(hint));
                    return None;
                }
            }
        }
        literal(&mut out, rest);
        Some(out)
    }
}

fn is_var_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `${workspaceFolder}`: the file's folder, or its parent for `.vscode/` and `.cursor/`.
pub(super) fn workspace_folder(path: &Path) -> String {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut dir = abs.parent().unwrap_or(Path::new("."));
    if matches!(
        dir.file_name().and_then(|n| n.to_str()),
        Some(".vscode" | ".cursor")
    ) {
        dir = dir.parent().unwrap_or(dir);
    }
    dir.to_string_lossy().into_owned()
}
