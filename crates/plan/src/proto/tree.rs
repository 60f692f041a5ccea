//! Where a scenario's `.proto` files and their imports are found, and how much of them
//! is read: protox's own file resolver reads any file whole (up to 2 GiB) and follows
//! imports without end but for cycles, so the tree is read here, within limits.
//!
//! Each file is looked up in the include paths in order (as protoc's `-I`), read up to
//! [`MAX_PROTO_FILE_BYTES`], and counted: at most [`MAX_PROTO_FILES`] files and
//! [`MAX_PROTO_TREE_BYTES`] in all per compilation. protobuf's well-known types
//! (`google/protobuf/*.proto`) come from protox, in memory. An import found nowhere is
//! remembered, so the error can name it with the paths searched.

use std::cell::RefCell;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use protox::file::{File, FileResolver, GoogleFileResolver, IncludeFileResolver};

/// The most bytes of one `.proto` file: the largest real ones are a few hundred KiB.
pub const MAX_PROTO_FILE_BYTES: u64 = 4 << 20;
/// The most `.proto` files one step's tree may read (the files listed and every import).
pub const MAX_PROTO_FILES: usize = 500;
/// The most bytes one step's tree may read in all.
pub const MAX_PROTO_TREE_BYTES: u64 = 32 << 20;

/// A limit of [`Tree`] that a file or the tree went past.
#[derive(Debug, thiserror::Error)]
pub enum TreeLimit {
    /// One file is larger than [`MAX_PROTO_FILE_BYTES`].
    #[error(
        "{} is larger than {} MiB, the limit of one .proto file",
        .path.display(),
        MAX_PROTO_FILE_BYTES >> 20
    )]
    FileTooLarge {
        /// The file.
        path: PathBuf,
    },
    /// The tree has more than [`MAX_PROTO_FILES`] files.
    #[error("more than {MAX_PROTO_FILES} .proto files in the tree of imports (reading {name})")]
    TooManyFiles {
        /// The file that went past.
        name: String,
    },
    /// The tree is larger than [`MAX_PROTO_TREE_BYTES`] in all.
    #[error(
        "the .proto files and their imports are larger than {} MiB in all (reading {name})",
        MAX_PROTO_TREE_BYTES >> 20
    )]
    TreeTooLarge {
        /// The file that went past.
        name: String,
    },
}

/// What a [`Tree`] read: shared with the caller, as protox owns the resolver.
#[derive(Debug, Default)]
pub(crate) struct Read {
    files: usize,
    bytes: u64,
    /// The last name found in no include path (nor among the well-known types).
    pub(crate) missing: Option<String>,
}

/// protox's [`FileResolver`] over include paths, within the limits above.
pub(crate) struct Tree {
    includes: Vec<PathBuf>,
    google: GoogleFileResolver,
    read: Rc<RefCell<Read>>,
}

impl Tree {
    /// A resolver over `includes`, searched in order; `read` is kept up to date.
    pub(crate) fn new(includes: Vec<PathBuf>, read: Rc<RefCell<Read>>) -> Tree {
        Tree {
            includes,
            google: GoogleFileResolver::new(),
            read,
        }
    }

    /// The text of `path`, `None` if there is no such file.
    fn text(&self, name: &str, path: &Path) -> Result<Option<String>, protox::Error> {
        let file = match std::fs::File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(protox::Error::new(e)),
        };
        if file.metadata().map_err(protox::Error::new)?.is_dir() {
            return Ok(None);
        }
        let mut bytes = Vec::new();
        file.take(MAX_PROTO_FILE_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(protox::Error::new)?;
        if bytes.len() as u64 > MAX_PROTO_FILE_BYTES {
            return Err(protox::Error::new(TreeLimit::FileTooLarge {
                path: path.to_path_buf(),
            }));
        }
        let mut read = self.read.borrow_mut();
        read.files += 1;
        read.bytes += bytes.len() as u64;
        if read.files > MAX_PROTO_FILES {
            return Err(protox::Error::new(TreeLimit::TooManyFiles {
                name: name.into(),
            }));
        }
        if read.bytes > MAX_PROTO_TREE_BYTES {
            return Err(protox::Error::new(TreeLimit::TreeTooLarge {
                name: name.into(),
            }));
        }
        String::from_utf8(bytes).map(Some).map_err(|_| {
            protox::Error::new(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{} is not valid UTF-8", path.display()),
            ))
        })
    }
}

impl FileResolver for Tree {
    fn resolve_path(&self, path: &Path) -> Option<String> {
        self.includes
            .iter()
            .find_map(|i| IncludeFileResolver::new(i.clone()).resolve_path(path))
    }

    fn open_file(&self, name: &str) -> Result<File, protox::Error> {
        for include in &self.includes {
            if let Some(text) = self.text(name, &include.join(name))? {
                return File::from_source(name, &text);
            }
        }
        match self.google.open_file(name) {
            Err(e) if e.is_file_not_found() => {
                self.read.borrow_mut().missing = Some(name.to_string());
                Err(e)
            }
            found => found,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{ProtoError, Schema};
    use super::*;

    const SYNTAX: &str = "syntax = \"proto3\";\n";

    fn put(dir: &Path, name: &str, text: &str) {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// route_guide's service split in two directories: `protos/routeguide/rg.proto`
    /// imports `common/point.proto`, found only under `protos/`.
    fn split_tree(dir: &Path) {
        put(
            dir,
            "protos/common/point.proto",
            &format!("{SYNTAX}package common;\nmessage Point {{ int32 latitude = 1; int32 longitude = 2; }}\n"),
        );
        put(
            dir,
            "protos/routeguide/rg.proto",
            &format!(
                "{SYNTAX}package routeguide;\nimport \"common/point.proto\";\n\
                 message Feature {{ string name = 1; common.Point location = 2; }}\n\
                 service RouteGuide {{ rpc GetFeature(common.Point) returns (Feature) {{}} }}\n"
            ),
        );
    }

    #[test]
    fn imports_are_found_in_the_import_paths_in_order() {
        let dir = tempfile::tempdir().unwrap();
        split_tree(dir.path());
        let files = ["protos/routeguide/rg.proto".to_string()];
        let schema =
            Schema::compile_with_imports(dir.path(), &files, &[dir.path().join("protos")]).unwrap();
        let method = schema.method("routeguide.RouteGuide/GetFeature").unwrap();
        assert_eq!(method.input_name(), "common.Point");
        method
            .encode(&serde_json::json!({"latitude": 1, "longitude": 2}))
            .unwrap();
    }

    #[test]
    fn a_missing_import_is_named_with_its_importer_and_the_paths_searched() {
        let dir = tempfile::tempdir().unwrap();
        split_tree(dir.path());
        let files = ["protos/routeguide/rg.proto".to_string()];
        let elsewhere = dir.path().join("elsewhere");
        let err =
            Schema::compile_with_imports(dir.path(), &files, std::slice::from_ref(&elsewhere))
                .unwrap_err();
        let text = err.to_string();
        let ProtoError::ImportNotFound {
            import, searched, ..
        } = &err
        else {
            panic!("{err:?}");
        };
        assert_eq!(import, "common/point.proto");
        assert!(
            searched.contains(&elsewhere.display().to_string()),
            "{text}"
        );
        assert!(
            text.starts_with("protos/routeguide/rg.proto: protos/routeguide/rg.proto:3:")
                && text.contains("import \"common/point.proto\" not found (imported by protos/routeguide/rg.proto)")
                && text.contains(&dir.path().join("protos/routeguide").display().to_string()),
            "{text}"
        );

        // Two levels down: the file that imports it is named, not the one listed.
        put(
            dir.path(),
            "a.proto",
            &format!("{SYNTAX}import \"b.proto\";\n"),
        );
        put(
            dir.path(),
            "b.proto",
            &format!("{SYNTAX}import \"gone/c.proto\";\n"),
        );
        let err = Schema::compile(dir.path(), &["a.proto".into()]).unwrap_err();
        assert!(
            matches!(&err, ProtoError::ImportNotFound { import, importer, file, .. }
                if import == "gone/c.proto" && importer == "b.proto" && file == "a.proto"),
            "{err:?}"
        );
    }

    #[test]
    fn an_import_cycle_is_an_error_not_a_hang() {
        let dir = tempfile::tempdir().unwrap();
        put(
            dir.path(),
            "a.proto",
            &format!("{SYNTAX}import \"b.proto\";\n"),
        );
        put(
            dir.path(),
            "b.proto",
            &format!("{SYNTAX}import \"a.proto\";\n"),
        );
        let err = Schema::compile(dir.path(), &["a.proto".into()]).unwrap_err();
        assert!(err.to_string().contains("import cycle"), "{err}");
    }

    #[test]
    fn a_huge_or_endless_file_is_cut_at_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let mut huge = String::from(SYNTAX);
        huge.push_str(&"// padding\n".repeat((MAX_PROTO_FILE_BYTES / 11 + 1) as usize));
        put(dir.path(), "huge.proto", &huge);
        let err = Schema::compile(dir.path(), &["huge.proto".into()]).unwrap_err();
        assert!(err.to_string().contains("larger than 4 MiB"), "{err}");
        // An import that never ends (a device): read up to the limit, not forever.
        put(
            dir.path(),
            "main.proto",
            &format!("{SYNTAX}import \"zero.proto\";\n"),
        );
        std::os::unix::fs::symlink("/dev/zero", dir.path().join("zero.proto")).unwrap();
        let err = Schema::compile(dir.path(), &["main.proto".into()]).unwrap_err();
        assert!(
            err.to_string().contains("zero.proto is larger than 4 MiB"),
            "{err}"
        );
    }

    #[test]
    fn a_tree_of_too_many_files_or_bytes_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut main = String::from(SYNTAX);
        for i in 0..MAX_PROTO_FILES {
            put(dir.path(), &format!("many/f{i}.proto"), SYNTAX);
            main.push_str(&format!("import \"many/f{i}.proto\";\n"));
        }
        put(dir.path(), "main.proto", &main);
        let err = Schema::compile(dir.path(), &["main.proto".into()]).unwrap_err();
        assert!(
            err.to_string()
                .contains(&format!("more than {MAX_PROTO_FILES} .proto files")),
            "{err}"
        );

        let big = "// padding\n".repeat(((MAX_PROTO_FILE_BYTES - 100) / 11) as usize);
        let mut main = String::from(SYNTAX);
        let n = MAX_PROTO_TREE_BYTES / MAX_PROTO_FILE_BYTES + 1;
        for i in 0..n {
            put(
                dir.path(),
                &format!("big/f{i}.proto"),
                &format!("{SYNTAX}{big}"),
            );
            main.push_str(&format!("import \"big/f{i}.proto\";\n"));
        }
        put(dir.path(), "main.proto", &main);
        let err = Schema::compile(dir.path(), &["main.proto".into()]).unwrap_err();
        assert!(
            err.to_string().contains("larger than 32 MiB in all"),
            "{err}"
        );
    }
}
