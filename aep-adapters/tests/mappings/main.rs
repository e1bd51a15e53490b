//! The mappings' integration tests, one module per vocabulary, linked as one\n//! test binary.

mod common;

mod acp;
mod agui;
mod antigravity;
mod cline;
mod codex;
mod gemini_cli;
mod hermes;
mod kimi_code;
mod opencode;
mod openhands;
mod otel;
mod pi;
mod properties;
mod qwen_code;
mod vscode;
