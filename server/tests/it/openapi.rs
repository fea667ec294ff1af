//! The OpenAPI document against the route table: every `/api/v1` route is documented with its method,
//! every documented operation is a route, and the request bodies have schemas.

use crate::common;

use common::test_app::TestApp;
use server::auth::policy::RULES;

#[tokio::test]
async fn every_api_route_is_documented_and_every_documented_operation_is_a_route() {
    let app = TestApp::builder().start().await;
    let r = app.anonymous().get("/api/v1/openapi.json").await;
    assert_eq!(r.status, 200, "the document is public");
    let doc = r.json();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."), "{doc}");
    let paths = doc["paths"].as_object().unwrap();
    let mut documented = 0;
    for rule in RULES.iter().filter(|r| r.path.starts_with("/api/v1/")) {
        let method = rule.method.as_str().to_lowercase();
        assert!(
            paths.get(rule.path).and_then(|p| p.get(&method)).is_some(),
            "{} {} is a route but not in the OpenAPI document",
            rule.method,
            rule.path
        );
        documented += 1;
    }
    let mut operations = 0;
    for (path, item) in paths {
        for method in item.as_object().unwrap().keys().filter(|k| ["get", "post", "put", "patch", "delete"].contains(&k.as_str())) {
            assert!(
                RULES.iter().any(|r| r.path == path && r.method.as_str().eq_ignore_ascii_case(method)),
                "{method} {path} is documented but is not a route"
            );
            operations += 1;
        }
    }
    assert_eq!(documented, operations);
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    for schema in ["JsonLaunch", "JsonImport", "JsonCompareCsv", "NewToken", "NewUser", "UserChange", "TrialOrder"] {
        assert!(schemas.contains_key(schema), "schema {schema} is in the document");
    }
    assert_eq!(
        paths["/api/v1/experiments"]["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/JsonLaunch"
    );
}
