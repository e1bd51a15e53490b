//! The registry tables, given Rust names.

use super::names::enum_variants;
use super::{At, Lowerer};
use crate::error::Error;
use crate::ir::RegistryIr;

impl<'r> Lowerer<'r> {
    /// The registry tables with Rust names.
    pub(super) fn registry(&self) -> Result<RegistryIr, Error> {
        let t = &self.registry.tables;
        let variants = |file: &str, values: &[String]| {
            let at = At {
                file,
                pointer: String::new(),
                module: "registry".to_owned(),
            };
            enum_variants(&at, values.to_vec())
        };
        let default_of = |values: &[(String, String)], default: &str| {
            values
                .iter()
                .find(|(v, _)| v == default)
                .map(|(_, variant)| variant.clone())
                .unwrap_or_default()
        };
        let type_names: Vec<String> = t.types.iter().map(|r| r.name.clone()).collect();
        let type_variants = variants("registry/types.json", &type_names)?;
        let category_names: Vec<String> = t.categories.iter().map(|c| c.name.clone()).collect();
        let category_variants = variants("registry/categories.json", &category_names)?;
        let severity = variants("registry/severity.json", &t.severity.levels.order)?;
        let capture = variants("registry/capture.json", &t.capture.order)?;
        Ok(RegistryIr {
            aep: t.aep.clone(),
            types: t
                .types
                .iter()
                .cloned()
                .zip(type_variants.into_iter().map(|(_, v)| v))
                .collect(),
            categories: t
                .categories
                .iter()
                .cloned()
                .zip(category_variants.into_iter().map(|(_, v)| v))
                .collect(),
            severity_default: default_of(&severity, &t.severity.levels.default),
            severity,
            severity_otlp: t.severity.otlp.clone(),
            severity_ocsf: t.severity.ocsf.clone(),
            capture_default: default_of(&capture, &t.capture.default),
            capture,
            nack_reasons: variants("registry/nack-reasons.json", &t.nack_reasons)?,
        })
    }
}
