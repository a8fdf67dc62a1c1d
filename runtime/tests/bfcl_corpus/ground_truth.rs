//! The ground truth of BFCL's AST categories as argument sets, and the explained kinds of
//! rejection (see `../bfcl_corpus.rs` and docs/bfcl-corpus.md).

use serde_json::{Map, Value};

/// One explained kind of rejected ground-truth argument set.
pub struct Explained {
    /// A short name for the kind (docs/bfcl-corpus.md explains each).
    pub kind: &'static str,
    /// The BFCL names of the tools whose ground truth shows it.
    pub tools: &'static [&'static str],
    /// Every violation the validator reports for such a set contains one of these.
    pub messages: &'static [&'static str],
}

/// Every kind of rejection (each explained in docs/bfcl-corpus.md, "Rejections"). A rejection
/// outside this list fails the test, and so does a kind that no longer occurs.
pub const EXPLAINED: &[Explained] = &[
    Explained {
        // BFCL's `type_checker` accepts a string where the ground truth has a string, whatever the
        // declared type (`is_variable`): Java/JavaScript/Python identifiers stand for values.
        kind: "variable name instead of a value",
        tools: &[
            "ProxyConnection.prepareCall",
            "RedissonConnection.bitOp",
            "NestedValueFetcher.createSourceMapStub",
            "Basic.checkSizes",
            "XContentBuilder.map",
            "DurationImpl.alignSigns",
            "ToTextStream.characters",
            "clear001a.runIt",
            "suspendpolicy017.settingVMDeathRequest",
            "filter_s002.setting22MethodEntryRequest",
            "manageReactState",
            "validateApiResponse",
            "prioritizeAndSort",
            "ChartSeriesGenerator",
            "configureShaderMaterial",
            "pollQueue",
            "addInitializedPropertyStatements",
            "maybeAddJsSyntheticRestParameter",
            "linear_regression_fit",
        ],
        messages: &[
            "expected array, got string",
            "expected object, got string",
            "expected integer, got string",
        ],
    },
    Explained {
        // SGD-derived tools declare `type: string` with "True"/"False"/"1" spellings where the
        // ground truth sends booleans and integers, or `integer` where it sends "dontcare"
        // (accepted by BFCL through `is_variable` too).
        kind: "SGD value of another type than declared",
        tools: &[
            "Hotels_4_SearchHotel",
            "Services_1_FindProvider",
            "Homes_2_FindHomeByArea",
        ],
        messages: &[
            "expected string, got boolean",
            "expected string, got number",
            "expected integer, got string \"dontcare\"",
            "is not one of",
        ],
    },
    Explained {
        // BFCL's checker never reads `enum`; it compares with the possible answers after
        // `standardize_string` (lower case, without spaces and `,./-_*^`).
        kind: "value outside the definition's enum",
        tools: &[
            "list_servers",
            "Media_3_FindMovies",
            "Music_3_LookupMusic",
            "Movies_1_FindMovies",
            "set_countdown",
            "ControlAppliance.execute",
            "sculpture.create_custom",
            "find_flute",
            "ecology_data.precipitation_stats",
            "building.get_dimensions",
            "recipe_search",
        ],
        messages: &["is not one of"],
    },
    Explained {
        // `[""]`, `[]`, or another parameter's name for a required parameter: BFCL's own checker
        // fails every call for this entry (`simple_function_checker:missing_required`).
        kind: "no value for a required parameter",
        tools: &[
            "Flights_4_SearchOnewayFlight",
            "transfer_to_human_agent",
            "record",
        ],
        messages: &["required but missing"],
    },
    Explained {
        // Alternatives such as "01/15/2021" and "Jan 15, 2021" beside "2021-01-15"; BFCL's
        // checker ignores `format`.
        kind: "date alternative that is not `format: date`",
        tools: &[
            "weather.get_by_city_date",
            "weather.get_by_coordinates_date",
        ],
        messages: &["is not a valid date"],
    },
    Explained {
        // `mod: ["", null]` on a `float` without a `null` default: Python's `None`, accepted by
        // BFCL as a `variable` of the ground truth's type.
        kind: "null for a parameter that is not nullable",
        tools: &["math.power"],
        messages: &["expected number, got null"],
    },
    Explained {
        // `[["Apple"], ["Microsoft"]]` among a list's alternatives, `true` among a string's.
        kind: "alternative of the wrong shape",
        tools: &["get_stock_price", "game_result.get_winner"],
        messages: &["expected string, got array", "expected string, got boolean"],
    },
    Explained {
        // Fruit names for `items: {type: integer}`; "ticket_001" for an integer ticket id (the
        // multi-turn checker executes calls and never checks types).
        kind: "value of another type than declared",
        tools: &["sort_list", "close_ticket"],
        messages: &["expected integer, got string"],
    },
];

/// A BFCL alternatives list: the first value that is not `""` (expanded), if any.
fn first(alternatives: &Value) -> Option<Value> {
    match alternatives {
        Value::Array(alts) => alts.iter().find(|v| *v != "").map(expand),
        literal => Some(literal.clone()),
    }
}

/// A value of a parameter's alternatives list: a dict maps keys to alternatives lists, and so
/// does each dict in a list; anything else is literal.
fn expand(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter_map(|(k, alts)| first(alts).map(|x| (k.clone(), x)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|x| if x.is_object() { expand(x) } else { x.clone() })
                .collect(),
        ),
        literal => literal.clone(),
    }
}

/// `v` without what may be omitted (`""` among its alternatives), nested dicts included.
fn minimal(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(_, alts)| !alts.as_array().is_some_and(|a| a.iter().any(|x| x == "")))
                .filter_map(|(k, alts)| {
                    let x = match alts {
                        Value::Array(a) => a.first().map(minimal),
                        literal => Some(literal.clone()),
                    };
                    x.map(|x| (k.clone(), x))
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|x| if x.is_object() { minimal(x) } else { x.clone() })
                .collect(),
        ),
        literal => literal.clone(),
    }
}

/// The argument sets of one BFCL ground-truth call `{param: [alternatives]}` of a function whose
/// definition requires `required` (module docs).
pub fn argument_sets(params: &Map<String, Value>, required: &[Value]) -> Vec<Value> {
    let base: Map<String, Value> = params
        .iter()
        .filter_map(|(k, alts)| first(alts).map(|v| (k.clone(), v)))
        .collect();
    // BFCL's checker refuses a call without a required parameter, `""` or not.
    let mut least = match minimal(&Value::Object(params.clone())) {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    for r in required.iter().filter_map(Value::as_str) {
        if let (false, Some(v)) = (least.contains_key(r), base.get(r)) {
            least.insert(r.to_string(), v.clone());
        }
    }
    let mut sets = vec![Value::Object(base.clone()), Value::Object(least)];
    for (k, alts) in params {
        let Value::Array(alts) = alts else { continue };
        for alt in alts.iter().filter(|v| *v != "").skip(1) {
            let mut one = base.clone();
            one.insert(k.clone(), expand(alt));
            sets.push(Value::Object(one));
        }
    }
    let mut seen = std::collections::HashSet::new();
    sets.retain(|s| seen.insert(s.to_string()));
    sets
}
