//! Compile-time contracts: what user code can write against the types
//! (`contracts/pass`), and what the types forbid (`contracts/fail`, each
//! with the compiler error it must give).

#[test]
fn contracts() {
    let cases = trybuild::TestCases::new();
    cases.pass("pass/*.rs");
    cases.compile_fail("fail/*.rs");
}
