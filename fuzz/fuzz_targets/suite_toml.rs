//! A suite file (the suites folder, `POST|PUT /api/v1/suites`). A suite that loads is written back as TOML
//! (the suite page, the editor), and that TOML loads again to the same definition.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok((name, _, definition)) = suite::parse_for_store(text) else { return };
    let toml = suite::to_toml(&definition).expect("a stored suite is written as TOML");
    let (again_name, _, again) = suite::parse_for_store(&toml).unwrap_or_else(|e| panic!("{e}\n--- written ---\n{toml}"));
    assert_eq!(name, again_name);
    assert_eq!(definition, again, "written back:\n{toml}");
    let _ = suite::to_toml(&suite::redacted(&definition));
});
