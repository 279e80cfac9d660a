//! A tool result checked against the tool's `outputSchema`, as an MCP
//! client that validates structured results would check it.

use serde_json::Value;

/// A tool's `outputSchema`, compiled.
pub struct OutputSchema {
    schemas: boon::Schemas,
    index: boon::SchemaIndex,
}

impl std::fmt::Debug for OutputSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OutputSchema")
    }
}

impl OutputSchema {
    /// The `outputSchema` of `tool` in a `tools/list` response: `Ok(None)`
    /// when the tool declares none, `Err` when it does not compile.
    pub fn of_tool(list: &Value, tool: &str) -> Result<Option<Self>, String> {
        let schema = list["result"]["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|t| t["name"] == tool)
            .and_then(|t| t.get("outputSchema"));
        let Some(schema) = schema else {
            return Ok(None);
        };
        let location = "urn:iai-mcp:output-schema";
        let mut compiler = boon::Compiler::new();
        compiler
            .add_resource(location, schema.clone())
            .map_err(|e| e.to_string())?;
        let mut schemas = boon::Schemas::new();
        let index = compiler
            .compile(location, &mut schemas)
            .map_err(|e| e.to_string())?;
        Ok(Some(Self { schemas, index }))
    }

    /// Checks a successful `tools/call` response: it must carry
    /// `structuredContent`, valid against the schema.
    pub fn check(&self, response: &Value) -> Result<(), String> {
        let Some(structured) = response["result"].get("structuredContent") else {
            return Err("a successful result without structuredContent".to_owned());
        };
        self.schemas.validate(structured, self.index).map_err(|e| {
            format!("{e:#}")
                .lines()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn results_are_checked_against_the_listed_schema() {
        let list = json!({"result": {"tools": [{"name": "topology", "outputSchema": {
            "type": "object", "properties": {"N": {"type": "integer"}}, "required": ["N"]}}]}});
        let schema = OutputSchema::of_tool(&list, "topology")
            .expect("compiles")
            .expect("declared");
        assert!(
            schema
                .check(&json!({"result": {"structuredContent": {"N": 3}}}))
                .is_ok()
        );
        let wrong = schema.check(&json!({"result": {"structuredContent": {"N": "3"}}}));
        assert!(wrong.is_err(), "{wrong:?}");
        assert!(schema.check(&json!({"result": {"content": []}})).is_err());
        assert!(
            OutputSchema::of_tool(&list, "other")
                .expect("fine")
                .is_none()
        );
    }
}
