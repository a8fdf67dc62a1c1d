//! Security (OAS 3.0 §4.7.27 / 3.1 §4.8.27 "Security Scheme Object", §4.7.30 / §4.8.30
//! "Security Requirement Object"): the schemes of `components.securitySchemes`
//! and the requirement lists of `security`. An operation's `security` replaces the document's
//! (`security: []`: no credentials). Credentials are never arguments: the runtime sends them
//! from the source's `auth`.

use std::collections::BTreeMap;

use serde_json::Value;

use super::refs::{self, escape};
use super::{ParamLocation, SecurityRequirement, SecurityScheme};

/// `security` (OAS 3.0 §4.7.30): a list of requirement objects.
pub(crate) fn security(v: &Value) -> Vec<SecurityRequirement> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_object)
                .map(|m| {
                    m.iter()
                        .map(|(k, s)| {
                            let scopes = s
                                .as_array()
                                .map(|a| {
                                    a.iter()
                                        .filter_map(Value::as_str)
                                        .map(str::to_string)
                                        .collect()
                                })
                                .unwrap_or_default();
                            (k.clone(), scopes)
                        })
                        .collect()
                })
                .collect()
        })
        .unwrap_or_default()
}

/// `components.securitySchemes` (OAS 3.0 §4.7.33).
pub(crate) fn security_schemes(root: &Value) -> BTreeMap<String, SecurityScheme> {
    let mut out = BTreeMap::new();
    let Some(m) = root
        .pointer("/components/securitySchemes")
        .and_then(Value::as_object)
    else {
        return out;
    };
    for (name, s) in m {
        let at = format!("#/components/securitySchemes/{}", escape(name));
        let Ok((s, _)) = refs::follow(root, s, &at) else {
            continue;
        };
        let get = |k: &str| s.get(k).and_then(Value::as_str).map(str::to_string);
        let scheme = match s.get("type").and_then(Value::as_str) {
            Some("apiKey") => {
                let location = match s.get("in").and_then(Value::as_str) {
                    Some("query") => ParamLocation::Query,
                    Some("cookie") => ParamLocation::Cookie,
                    _ => ParamLocation::Header,
                };
                SecurityScheme::ApiKey {
                    name: get("name").unwrap_or_default(),
                    location,
                }
            }
            Some("http") => SecurityScheme::Http {
                scheme: get("scheme").unwrap_or_default().to_ascii_lowercase(),
            },
            Some("oauth2") => SecurityScheme::OAuth2 {
                token_url: s
                    .pointer("/flows/clientCredentials/tokenUrl")
                    .and_then(Value::as_str)
                    .map(str::to_string),
            },
            Some("openIdConnect") => SecurityScheme::OpenIdConnect {
                url: get("openIdConnectUrl").unwrap_or_default(),
            },
            Some("mutualTLS") => SecurityScheme::MutualTls,
            _ => continue,
        };
        out.insert(name.clone(), scheme);
    }
    out
}
