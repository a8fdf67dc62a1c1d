//! OAS 3.1 §4.8.12.4 "Style Examples": every style × explode × type, with the table's values
//! (`color`: `""`, `"blue"`, `["blue","black","brown"]`, `{"R":100,"G":200,"B":150}`).

use serde_json::{Value, json};
use toolgate_model::openapi::ParamLocation::{Cookie, Header, Path, Query};
use toolgate_model::openapi::ParamStyle::{
    DeepObject, Form, Label, Matrix, PipeDelimited, Simple, SpaceDelimited,
};

use super::super::style::{
    cookie_pairs, encode_segment, form_field, header_value, param, path_value, query_pieces,
};

fn string() -> Value {
    json!("blue")
}
fn array() -> Value {
    json!(["blue", "black", "brown"])
}
fn object() -> Value {
    json!({"R": 100, "G": 200, "B": 150})
}

#[test]
fn path_styles() {
    let cases = [
        (Simple, false, string(), "blue"),
        (Simple, false, array(), "blue,black,brown"),
        (Simple, false, object(), "R,100,G,200,B,150"),
        (Simple, true, string(), "blue"),
        (Simple, true, array(), "blue,black,brown"),
        (Simple, true, object(), "R=100,G=200,B=150"),
        (Label, false, json!(""), "."),
        (Label, false, string(), ".blue"),
        (Label, false, array(), ".blue,black,brown"),
        (Label, false, object(), ".R,100,G,200,B,150"),
        (Label, true, string(), ".blue"),
        (Label, true, array(), ".blue.black.brown"),
        (Label, true, object(), ".R=100.G=200.B=150"),
        (Matrix, false, json!(""), ";color"),
        (Matrix, false, string(), ";color=blue"),
        (Matrix, false, array(), ";color=blue,black,brown"),
        (Matrix, false, object(), ";color=R,100,G,200,B,150"),
        (Matrix, true, string(), ";color=blue"),
        (Matrix, true, array(), ";color=blue;color=black;color=brown"),
        (Matrix, true, object(), ";R=100;G=200;B=150"),
    ];
    for (style, explode, value, expected) in cases {
        let p = param("color", Path, style, explode);
        assert_eq!(
            path_value(&p, &value),
            expected,
            "{style:?} explode={explode} {value}"
        );
    }
}

#[test]
fn query_styles() {
    let cases: [(_, _, Value, &[&str]); 13] = [
        (Form, false, json!(""), &["color="]),
        (Form, false, string(), &["color=blue"]),
        (Form, false, array(), &["color=blue,black,brown"]),
        (Form, false, object(), &["color=R,100,G,200,B,150"]),
        (Form, true, string(), &["color=blue"]),
        (
            Form,
            true,
            array(),
            &["color=blue", "color=black", "color=brown"],
        ),
        (Form, true, object(), &["R=100", "G=200", "B=150"]),
        (
            SpaceDelimited,
            false,
            array(),
            &["color=blue%20black%20brown"],
        ),
        (
            SpaceDelimited,
            false,
            object(),
            &["color=R%20100%20G%20200%20B%20150"],
        ),
        (PipeDelimited, false, array(), &["color=blue|black|brown"]),
        (PipeDelimited, false, object(), &["color=R|100|G|200|B|150"]),
        (
            DeepObject,
            true,
            object(),
            &["color[R]=100", "color[G]=200", "color[B]=150"],
        ),
        // a style that does not fit the value falls back to form
        (DeepObject, true, string(), &["color=blue"]),
    ];
    for (style, explode, value, expected) in cases {
        let p = param("color", Query, style, explode);
        assert_eq!(
            query_pieces(&p, &value),
            expected,
            "{style:?} explode={explode} {value}"
        );
    }
}

#[test]
fn primitives_print_as_json_and_empty_collections_send_nothing() {
    let p = param("n", Query, Form, true);
    assert_eq!(query_pieces(&p, &json!(true)), ["n=true"]);
    assert_eq!(query_pieces(&p, &json!(1.5)), ["n=1.5"]);
    assert_eq!(query_pieces(&p, &json!(-3)), ["n=-3"]);
    assert!(query_pieces(&p, &json!([])).is_empty());
    assert!(query_pieces(&p, &json!({})).is_empty());
    // nested values inside an array are sent as JSON text
    assert_eq!(
        query_pieces(&p, &json!([{"a": 1}])),
        ["n=%7B%22a%22%3A1%7D"]
    );
}

#[test]
fn query_encoding_and_allow_reserved() {
    let mut p = param("q", Query, Form, true);
    assert_eq!(
        query_pieces(&p, &json!("a b&c=d/é#")),
        ["q=a%20b%26c%3Dd%2F%C3%A9%23"]
    );
    p.allow_reserved = true;
    assert_eq!(
        query_pieces(&p, &json!("a b&c=d/?:@#")),
        ["q=a%20b&c=d/?:@%23"]
    );
    let odd = param("a b", Query, Form, true);
    assert_eq!(query_pieces(&odd, &json!("x")), ["a%20b=x"]);
}

#[test]
fn deep_object_nests() {
    let p = param("filter", Query, DeepObject, true);
    assert_eq!(
        query_pieces(&p, &json!({"a": {"b": "x y"}, "tags": [1, 2]})),
        ["filter[a][b]=x%20y", "filter[tags]=1", "filter[tags]=2"]
    );
}

#[test]
fn content_parameters_are_json() {
    let mut p = param("filter", Query, Form, true);
    p.content = Some("application/json".into());
    assert_eq!(
        query_pieces(&p, &json!({"a": 1})),
        ["filter=%7B%22a%22%3A1%7D"]
    );
    let mut h = param("X-Filter", Header, Simple, false);
    h.content = Some("application/json".into());
    assert_eq!(header_value(&h, &json!({"a": [1]})), r#"{"a":[1]}"#);
}

#[test]
fn header_simple() {
    let p = param("X-Color", Header, Simple, false);
    assert_eq!(header_value(&p, &string()), "blue");
    assert_eq!(header_value(&p, &array()), "blue,black,brown");
    assert_eq!(header_value(&p, &object()), "R,100,G,200,B,150");
    let p = param("X-Color", Header, Simple, true);
    assert_eq!(header_value(&p, &object()), "R=100,G=200,B=150");
}

#[test]
fn cookie_form() {
    let p = param("color", Cookie, Form, true);
    assert_eq!(cookie_pairs(&p, &string()), ["color=blue"]);
    assert_eq!(
        cookie_pairs(&p, &array()),
        ["color=blue", "color=black", "color=brown"]
    );
    assert_eq!(cookie_pairs(&p, &object()), ["R=100", "G=200", "B=150"]);
    let p = param("color", Cookie, Form, false);
    assert_eq!(cookie_pairs(&p, &array()), ["color=blue,black,brown"]);
    assert_eq!(cookie_pairs(&p, &json!("a; b")), ["color=a%3B%20b"]);
}

#[test]
fn path_segments_keep_only_unreserved_characters() {
    assert_eq!(encode_segment("docs/a?b#c%.md"), "docs%2Fa%3Fb%23c%25.md");
    assert_eq!(encode_segment("web site"), "web%20site");
    assert_eq!(encode_segment("A-z_0.9~"), "A-z_0.9~");
    assert_eq!(encode_segment("é:@"), "%C3%A9%3A%40");
}

#[test]
fn form_bodies_repeat_arrays_and_nest_objects() {
    assert_eq!(
        form_field("scope", &json!(["read", "write"]), None),
        ["scope=read", "scope=write"]
    );
    assert_eq!(form_field("a", &json!({"b": 1}), None), ["a[b]=1"]);
    assert_eq!(form_field("t", &json!("x y+z"), None), ["t=x%20y%2Bz"]);
    assert!(form_field("n", &json!(null), None).is_empty());
}
