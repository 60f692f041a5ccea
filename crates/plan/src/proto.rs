//! `.proto` files compiled at load time (protox, pure Rust) into a descriptor pool, the
//! methods a scenario calls looked up in it, and messages converted between JSON and the
//! protobuf wire format through dynamic messages (prost-reflect, its protobuf JSON
//! mapping).

mod tree;

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use prost::Message as _;
use prost_reflect::{DescriptorPool, DynamicMessage, MessageDescriptor, SerializeOptions};

pub use tree::{TreeLimit, MAX_PROTO_FILES, MAX_PROTO_FILE_BYTES, MAX_PROTO_TREE_BYTES};

/// Why a proto file, method or message was not usable: bad input, reported at load time.
#[derive(Debug, thiserror::Error)]
pub enum ProtoError {
    /// An import was found in none of the include paths.
    #[error(
        "{file}: {at}import {import:?} not found (imported by {importer}); searched {searched} \
         (import paths are added with `proto: {{files: [...], import_paths: [...]}}` or \
         --proto-path DIR)"
    )]
    ImportNotFound {
        /// The file named in the scenario whose tree holds the import.
        file: String,
        /// `path:line:column: ` of the import statement, or empty.
        at: String,
        /// The import as written.
        import: String,
        /// The file that imports it.
        importer: String,
        /// The include paths searched, in order.
        searched: String,
    },
    /// protox could not read or compile a file (its message, and `at`, give the line).
    #[error("{file}: {at}{}", DebugChain(.source))]
    Compile {
        /// The file named in the scenario.
        file: String,
        /// `path:line:column: ` where protox located the error, or empty.
        at: String,
        /// protox's error.
        #[source]
        source: protox::Error,
    },
    /// `call:` is not `package.Service/Method`.
    #[error("call {call:?}: expected package.Service/Method")]
    CallSyntax {
        /// The call as written.
        call: String,
    },
    /// No such service in the compiled files.
    #[error("call {call:?}: no service {service:?} in {files}")]
    UnknownService {
        /// The call as written.
        call: String,
        /// The service asked for.
        service: String,
        /// The proto files searched.
        files: String,
    },
    /// The service has no such method.
    #[error("call {call:?}: service {service:?} has no method {method:?} (it has: {known})")]
    UnknownMethod {
        /// The call as written.
        call: String,
        /// The service.
        service: String,
        /// The method asked for.
        method: String,
        /// The methods it has.
        known: String,
    },
    /// Client-streaming and bidirectional calls are not supported.
    #[error(
        "call {call:?}: client-streaming methods are not supported (unary and server-streaming are)"
    )]
    ClientStreaming {
        /// The call as written.
        call: String,
    },
    /// The message JSON does not fit the method's input type.
    #[error("message does not fit {type_name}: {reason}")]
    Message {
        /// The full name of the input type.
        type_name: String,
        /// serde's explanation.
        reason: String,
    },
    /// A received message did not decode as the output type.
    #[error("response is not a valid {type_name}: {reason}")]
    Decode {
        /// The full name of the output type.
        type_name: String,
        /// prost's explanation.
        reason: String,
    },
}

/// The compiled proto files of a scenario.
#[derive(Debug, Clone)]
pub struct Schema {
    pool: DescriptorPool,
    files: String,
}

impl Schema {
    /// Compiles `files` (paths as given, relative to `base`, the scenario's directory),
    /// with imports resolved next to each file and under `base`.
    pub fn compile(base: &Path, files: &[String]) -> Result<Schema, ProtoError> {
        Schema::compile_with_imports(base, files, &[])
    }

    /// [`Schema::compile`] with `import_paths` searched too, after `base` and the
    /// files' own directories, in order (as protoc's `-I`); each is used as given
    /// (the caller resolves relative ones). The tree read is bounded (`tree.rs`).
    pub fn compile_with_imports(
        base: &Path,
        files: &[String],
        import_paths: &[PathBuf],
    ) -> Result<Schema, ProtoError> {
        let shown = files.join(", ");
        let mut includes: Vec<PathBuf> = vec![base.to_path_buf()];
        let mut paths = Vec::with_capacity(files.len());
        for file in files {
            let path = base.join(file);
            if let Some(dir) = path.parent() {
                if !includes.iter().any(|i| i == dir) {
                    includes.push(dir.to_path_buf());
                }
            }
            paths.push(path);
        }
        for dir in import_paths {
            if !includes.contains(dir) {
                includes.push(dir.clone());
            }
        }
        let read = Rc::new(RefCell::new(tree::Read::default()));
        let mut compiler =
            protox::Compiler::with_file_resolver(tree::Tree::new(includes.clone(), read.clone()));
        compiler.include_imports(true);
        for (file, path) in files.iter().zip(&paths) {
            // One at a time so an error names its file; protox's own message gives the
            // line and column inside it.
            compiler.open_file(path).map_err(|source| {
                let at = position(base, &includes, &source).unwrap_or_default();
                let missing = read.borrow_mut().missing.take();
                match (source.is_file_not_found(), source.file(), missing) {
                    (true, Some(importer), Some(import)) => ProtoError::ImportNotFound {
                        file: file.to_string(),
                        at,
                        import,
                        importer: importer.to_string(),
                        searched: includes
                            .iter()
                            .map(|i| i.display().to_string())
                            .chain(["protobuf's well-known types".to_string()])
                            .collect::<Vec<_>>()
                            .join(", "),
                    },
                    _ => ProtoError::Compile {
                        file: file.to_string(),
                        at,
                        source,
                    },
                }
            })?;
        }
        Ok(Schema {
            pool: compiler.descriptor_pool(),
            files: shown,
        })
    }

    /// Looks up `package.Service/Method`.
    pub fn method(&self, call: &str) -> Result<Method, ProtoError> {
        let (service, method) = call
            .split_once('/')
            .filter(|(s, m)| !s.is_empty() && !m.is_empty() && !m.contains('/'))
            .ok_or_else(|| ProtoError::CallSyntax {
                call: call.to_string(),
            })?;
        let svc =
            self.pool
                .get_service_by_name(service)
                .ok_or_else(|| ProtoError::UnknownService {
                    call: call.to_string(),
                    service: service.to_string(),
                    files: self.files.clone(),
                })?;
        let found = svc.methods().find(|m| m.name() == method).ok_or_else(|| {
            ProtoError::UnknownMethod {
                call: call.to_string(),
                service: service.to_string(),
                method: method.to_string(),
                known: svc
                    .methods()
                    .map(|m| m.name().to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
            }
        })?;
        if found.is_client_streaming() {
            return Err(ProtoError::ClientStreaming {
                call: call.to_string(),
            });
        }
        Ok(Method {
            path: format!("/{service}/{method}"),
            input: found.input(),
            output: found.output(),
            server_streaming: found.is_server_streaming(),
        })
    }
}

/// `FILE:LINE:COLUMN: ` of a protox error that points into a file, from its first label.
fn position(base: &Path, includes: &[PathBuf], e: &protox::Error) -> Option<String> {
    use miette::Diagnostic as _;
    let file = e.file()?;
    let offset = e.labels()?.next()?.offset();
    let text = includes
        .iter()
        .chain(std::iter::once(&base.to_path_buf()))
        .find_map(|dir| std::fs::read_to_string(dir.join(file)).ok())?;
    let before = text.get(..offset)?;
    let line = before.matches('\n').count() + 1;
    let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
    Some(format!("{file}:{line}:{column}: "))
}

/// protox errors print their cause chain through `Display` of the source; this shows it.
struct DebugChain<'a>(&'a protox::Error);

impl std::fmt::Display for DebugChain<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)?;
        let mut source = std::error::Error::source(self.0);
        while let Some(s) = source {
            write!(f, ": {s}")?;
            source = s.source();
        }
        Ok(())
    }
}

/// One callable method.
#[derive(Debug, Clone)]
pub struct Method {
    /// The HTTP/2 `:path`: `/package.Service/Method`.
    pub path: String,
    input: MessageDescriptor,
    output: MessageDescriptor,
    /// Whether the server answers with a stream of messages.
    pub server_streaming: bool,
}

impl Method {
    /// Encodes a request message written as JSON (the protobuf JSON mapping: field
    /// names as in the proto or lowerCamelCase, 64-bit integers as numbers or strings,
    /// enums by name). Unknown fields are errors.
    pub fn encode(&self, json: &serde_json::Value) -> Result<Vec<u8>, ProtoError> {
        let message = DynamicMessage::deserialize(self.input.clone(), json).map_err(|e| {
            ProtoError::Message {
                type_name: self.input.full_name().to_string(),
                reason: e.to_string(),
            }
        })?;
        Ok(message.encode_to_vec())
    }

    /// Decodes a response message into JSON (proto field names, fields at their default
    /// value included, so a capture of a zero or empty field finds it; 64-bit integers
    /// as numbers).
    pub fn decode(&self, bytes: &[u8]) -> Result<serde_json::Value, ProtoError> {
        let fail = |reason: String| ProtoError::Decode {
            type_name: self.output.full_name().to_string(),
            reason,
        };
        let message =
            DynamicMessage::decode(self.output.clone(), bytes).map_err(|e| fail(e.to_string()))?;
        let options = SerializeOptions::new()
            .use_proto_field_name(true)
            .skip_default_fields(false)
            .stringify_64_bit_integers(false);
        message
            .serialize_with_options(serde_json::value::Serializer, &options)
            .map_err(|e| fail(e.to_string()))
    }

    /// The input type's full name.
    pub fn input_name(&self) -> &str {
        self.input.full_name()
    }
}
