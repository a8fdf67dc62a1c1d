//! Names that say "credential": of arguments and fields ([`is_credential_key`]) and of the
//! places secrets are configured under ([`is_secret_name`]).

/// Whether `key` names a credential: compared without case, `-`, `_` and `.`, it contains
/// `password`, `passwd`, `passphrase`, `secret`, `token` (not `tokens`: `max_tokens` is a
/// count), `apikey`, `authorization`, `credential`, `privatekey`, `accesskey`, `cookie` or
/// `sessionid`. For argument names and log fields: narrow on purpose, so that an argument
/// called `key` or `auth_mode` is still shown.
pub fn is_credential_key(key: &str) -> bool {
    let k: String = key
        .chars()
        .filter(|c| !matches!(c, '-' | '_' | '.'))
        .flat_map(char::to_lowercase)
        .collect();
    const WORDS: &[&str] = &[
        "password",
        "passwd",
        "passphrase",
        "secret",
        "apikey",
        "authorization",
        "credential",
        "privatekey",
        "accesskey",
        "cookie",
        "sessionid",
    ];
    WORDS.iter().any(|w| k.contains(w)) || (k.contains("token") && !k.contains("tokens"))
}

/// Whether a configuration name (an environment variable, an HTTP header, a `${NAME}`
/// variable, a `${file:...}` path) says that its value is a credential: it [is a credential
/// key](is_credential_key), or one of its words (split at `_`, `-`, `.`, `/`) is, without case,
/// `key`, `pat`, `pass`, `pwd`, `pw`, `auth`, `creds`, `jwt`, `bearer` or `signature`
/// (`OPENAI_KEY`, `X-Auth`, `GH_PAT`, `/run/secrets/db`).
pub fn is_secret_name(name: &str) -> bool {
    const WORDS: &[&str] = &[
        "key",
        "pat",
        "pass",
        "pwd",
        "pw",
        "auth",
        "creds",
        "jwt",
        "bearer",
        "signature",
    ];
    is_credential_key(name)
        || name
            .split(['_', '-', '.', '/'])
            .any(|w| WORDS.iter().any(|k| w.eq_ignore_ascii_case(k)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_keys_are_recognized() {
        for k in [
            "password",
            "db_password",
            "API_KEY",
            "x-api-key",
            "Authorization",
            "access_token",
            "client.secret",
            "Cookie",
        ] {
            assert!(is_credential_key(k), "{k}");
        }
        for k in ["max_tokens", "query", "author", "path", "keyword", "key"] {
            assert!(!is_credential_key(k), "{k}");
        }
    }

    #[test]
    fn secret_names_are_recognized() {
        for n in [
            "GITHUB_TOKEN",
            "OPENAI_KEY",
            "X-Auth",
            "GH_PAT",
            "DB_PASS",
            "Proxy-Authorization",
            "X-Goog-Api-Key",
            "/run/secrets/db",
            "SERVICE_JWT",
        ] {
            assert!(is_secret_name(n), "{n}");
        }
        for n in [
            "MODE",
            "HOME",
            "LOG_LEVEL",
            "Accept",
            "X-Tenant",
            "AUTHOR",
            "KEYBOARD",
            "PATH",
            "/tmp/x/trace",
        ] {
            assert!(!is_secret_name(n), "{n}");
        }
    }
}
