//! The registry tables, given Rust names.

use super::names::enum_variants;
use super::{At, Lowerer};
use crate::error::Error;
use crate::ir::{CategoryEntry, RegistryIr, TypeEntry};
use crate::load::{CATEGORY_SCOPES, STATUSES, TYPE_SCOPES};

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
        let variant_of = |values: &[(String, String)], value: &str| {
            values
                .iter()
                .find(|(v, _)| v == value)
                .map(|(_, variant)| variant.clone())
                .unwrap_or_default()
        };
        let statuses = variants("registry/types.json", &owned(STATUSES))?;
        let type_scopes = variants("registry/types.json", &owned(TYPE_SCOPES))?;
        let category_scopes = variants("registry/categories.json", &owned(CATEGORY_SCOPES))?;
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
                .zip(type_variants)
                .map(|(row, (_, variant))| TypeEntry {
                    name: row.name.clone(),
                    variant,
                    status: variant_of(&statuses, &row.status),
                    mandatory: row.status == "mandatory",
                    scope: variant_of(&type_scopes, &row.scope),
                    schema: row.schema.clone(),
                    summary: row.summary.clone(),
                })
                .collect(),
            categories: t
                .categories
                .iter()
                .zip(category_variants)
                .map(|(row, (_, variant))| CategoryEntry {
                    name: row.name.clone(),
                    variant,
                    scope: variant_of(&category_scopes, &row.scope),
                    summary: row.summary.clone(),
                })
                .collect(),
            statuses,
            type_scopes,
            category_scopes,
            severity_default: variant_of(&severity, &t.severity.levels.default),
            severity,
            severity_otlp: t.severity.otlp.clone(),
            severity_ocsf: t.severity.ocsf.clone(),
            capture_default: variant_of(&capture, &t.capture.default),
            capture,
            nack_reasons: variants("registry/nack-reasons.json", &t.nack_reasons)?,
        })
    }
}

fn owned(values: &[&str]) -> Vec<String> {
    values.iter().map(|v| (*v).to_owned()).collect()
}
