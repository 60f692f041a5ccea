//! Module scope: imports bind k6's built-ins (or values reported unknown), top-level
//! declarations are evaluated, `export`s are kept (`options`, `default`, `setup`,
//! `teardown`, scenario functions).

use oxc_ast::ast::{
    BindingPattern, Declaration, ExportDefaultDeclarationKind, ImportDeclarationSpecifier,
    ModuleExportName, Program, Statement, VariableDeclaration,
};
use oxc_span::GetSpan;

use super::value::{FnRef, Value};
use super::Interp;
use crate::ConvertError;

impl<'a> Interp<'a, '_> {
    /// Module scope: imports bind built-ins, declarations are evaluated, exports kept.
    pub(crate) fn module(&mut self, program: &'a Program<'a>) -> Result<(), ConvertError> {
        // Function declarations are hoisted: bind them all first.
        for stmt in &program.body {
            let f = match stmt {
                Statement::FunctionDeclaration(f) => Some(&**f),
                Statement::ExportNamedDeclaration(_) => None,
                _ => None,
            };
            if let Some(f) = f {
                if let Some(id) = &f.id {
                    self.declare(id.name.as_str(), Value::Func(FnRef::Function(f)));
                }
            }
        }
        for stmt in &program.body {
            self.top(stmt)?;
        }
        Ok(())
    }

    /// One statement at module scope.
    fn top(&mut self, stmt: &'a Statement<'a>) -> Result<(), ConvertError> {
        match stmt {
            Statement::ImportDeclaration(decl) => {
                let module = decl.source.value.as_str();
                let known = super::eval::module_known(module);
                for spec in decl.specifiers.iter().flatten() {
                    let (local, imported) = match spec {
                        ImportDeclarationSpecifier::ImportSpecifier(s) => {
                            let imported = match &s.imported {
                                ModuleExportName::IdentifierName(n) => n.name.to_string(),
                                ModuleExportName::IdentifierReference(n) => n.name.to_string(),
                                ModuleExportName::StringLiteral(s) => s.value.to_string(),
                            };
                            (s.local.name.to_string(), imported)
                        }
                        ImportDeclarationSpecifier::ImportDefaultSpecifier(s) => {
                            (s.local.name.to_string(), default_import(module))
                        }
                        ImportDeclarationSpecifier::ImportNamespaceSpecifier(s) => {
                            (s.local.name.to_string(), default_import(module))
                        }
                    };
                    let value = match known {
                        true => Value::Builtin(imported),
                        false => Value::Unknown(format!(
                            "`{local}` comes from {module}, which is not converted"
                        )),
                    };
                    self.declare(&local, value);
                }
                match known {
                    true => self.ok(decl.span, format!("import {module}")),
                    false => self.left(
                        decl.span,
                        format!("import {module}"),
                        "this module is not converted; what the script uses of it is reported where it is used",
                    ),
                }
            }
            Statement::ExportNamedDeclaration(_) | Statement::ExportFromDeclaration(_) => {
                self.left(stmt.span(), "export", "re-exports are not read");
            }
            Statement::ExportDeclaration(decl) => match &decl.declaration {
                Declaration::FunctionDeclaration(f) => {
                    if let Some(id) = &f.id {
                        let name = id.name.to_string();
                        self.declare(&name, Value::Func(FnRef::Function(f)));
                        self.exports.push((name, FnRef::Function(f)));
                    }
                }
                Declaration::VariableDeclaration(v) => {
                    self.variables(v)?;
                    for d in &v.declarations {
                        let BindingPattern::BindingIdentifier(id) = &d.id else {
                            continue;
                        };
                        let name = id.name.as_str();
                        let value = self.lookup(name).cloned().unwrap_or(Value::Undefined);
                        if name == "options" {
                            self.options_value = Some((value, d.span));
                        } else if let Value::Func(f) = value {
                            self.exports.push((name.to_string(), f));
                        }
                    }
                }
                other => self.left(
                    other.span(),
                    "export",
                    "only functions and variables are read",
                ),
            },
            Statement::ExportDefaultDeclaration(decl) => match &decl.declaration {
                ExportDefaultDeclarationKind::FunctionDeclaration(f) => {
                    self.exports.push(("default".into(), FnRef::Function(f)));
                }
                other => {
                    let e = other.as_expression();
                    let value = match e {
                        Some(e) => self.expr(e)?,
                        None => Value::Unknown("not a function".into()),
                    };
                    match value {
                        Value::Func(f) => self.exports.push(("default".into(), f)),
                        v => self.left(decl.span, "export default", v.why()),
                    }
                }
            },
            Statement::FunctionDeclaration(_) => {}
            other => {
                self.stmt(other)?;
            }
        }
        Ok(())
    }

    /// `let`/`const`/`var` declarations.
    pub(crate) fn variables(
        &mut self,
        decl: &'a VariableDeclaration<'a>,
    ) -> Result<(), ConvertError> {
        for d in &decl.declarations {
            let value = match &d.init {
                Some(init) => self.expr(init)?,
                None => Value::Undefined,
            };
            self.bind(&d.id, value, d.span);
        }
        Ok(())
    }
}

/// What a default import or a namespace import of a known module is bound to.
fn default_import(module: &str) -> String {
    match module {
        "k6/http" => "http".into(),
        "k6" => "k6".into(),
        m if m.contains("papaparse") => "papaparse".into(),
        m => m.to_string(),
    }
}
