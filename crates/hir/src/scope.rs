//! The file scope: the names every body of a file may use besides its own locals — the file's
//! functions and top-level variables, and the functions and `cns` constants of the files it
//! imports — and the item-level problems: names defined twice, missing imports, import cycles.

use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHashSet};
use smol_str::SmolStr;

use crate::{
    DefId, DefKind, SourceFile,
    body::{LocalId, Qualifier, body_query},
    db::{Db, item_tree, resolve_import},
    diagnostics::{Code, Diagnostic},
};

/// A name at file level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScopeItem {
    Function(DefId),
    /// A variable declared at the top level of a file (`def` is that file's top level).
    Global {
        def: DefId,
        local: LocalId,
        is_cns: bool,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FileScope {
    pub items: FxHashMap<SmolStr, ScopeItem>,
    /// Whether an import is missing or in a cycle: then an unknown name may be one that import
    /// would have provided, and is not reported again.
    pub incomplete: bool,
}

impl FileScope {
    pub fn get(&self, name: &str) -> Option<ScopeItem> {
        self.items.get(name).copied()
    }
}

/// The top-level definition of a file.
pub fn top_level_def(db: &dyn Db, file: SourceFile) -> DefId {
    DefId::new(db, file, DefKind::TopLevel, 0)
}

/// What a file defines for others: its functions and top-level variables (first definition of
/// each name wins).
#[salsa::tracked(returns(ref))]
pub fn file_exports(db: &dyn Db, file: SourceFile) -> Arc<FileScope> {
    let mut scope = FileScope::default();
    for (i, function) in item_tree(db, file).functions.iter().enumerate() {
        if function.name.is_empty() {
            continue;
        }
        let def = DefId::new(db, file, DefKind::Function, i as u32);
        scope.items.entry(function.name.clone()).or_insert(ScopeItem::Function(def));
    }
    let top = top_level_def(db, file);
    let lowered = body_query(db, top);
    for (local, data) in lowered.body.locals.iter() {
        if data.scope_depth != 0 || data.name.is_empty() {
            continue;
        }
        // Shape variables count when the declaration that binds them is `cns` (their qualifier
        // is that declaration's).
        let is_cns = data.qualifier == Some(Qualifier::Cns);
        scope.items.entry(data.name.clone()).or_insert(ScopeItem::Global {
            def: top,
            local,
            is_cns,
        });
    }
    Arc::new(scope)
}

/// The names a file's bodies see: its own exports, then the functions and constants of its
/// imports (direct imports only: an import does not re-export).
#[salsa::tracked(returns(ref))]
pub fn file_scope(db: &dyn Db, file: SourceFile) -> Arc<FileScope> {
    let mut scope = (**file_exports(db, file)).clone();
    for index in 0..item_tree(db, file).imports.len() {
        let Some(imported) = resolve_import(db, file, index as u32) else {
            scope.incomplete = true;
            continue;
        };
        // An import in a cycle is reported and contributes nothing, so that queries across files
        // (the types of imported constants) never depend on themselves.
        if imported == file || imports_reach(db, imported, file) {
            scope.incomplete = true;
            continue;
        }
        for (name, item) in &file_exports(db, imported).items {
            let visible = match item {
                ScopeItem::Function(_) => true,
                ScopeItem::Global { is_cns, .. } => *is_cns,
            };
            if visible {
                scope.items.entry(name.clone()).or_insert(*item);
            }
        }
    }
    Arc::new(scope)
}

/// The record types a file's bodies may name: its own `struct`s, then those of the files it
/// imports directly (first definition of each name wins). Read from the item trees alone, so
/// that lowering any body, the top level's included, may ask it.
#[salsa::tracked(returns(ref))]
pub fn record_types(db: &dyn Db, file: SourceFile) -> Arc<FxHashMap<SmolStr, DefId>> {
    let mut types = FxHashMap::default();
    let add = |file: SourceFile, types: &mut FxHashMap<SmolStr, DefId>| {
        for (i, record) in item_tree(db, file).structs.iter().enumerate() {
            if !record.name.is_empty() {
                let def = DefId::new(db, file, DefKind::Struct, i as u32);
                types.entry(record.name.clone()).or_insert(def);
            }
        }
    };
    add(file, &mut types);
    for index in 0..item_tree(db, file).imports.len() {
        if let Some(imported) = resolve_import(db, file, index as u32) {
            add(imported, &mut types);
        }
    }
    Arc::new(types)
}

/// Whether following imports from `start` leads back to `file`.
fn imports_reach(db: &dyn Db, start: SourceFile, file: SourceFile) -> bool {
    let mut stack = vec![start];
    let mut seen = FxHashSet::default();
    while let Some(next) = stack.pop() {
        if next == file {
            return true;
        }
        if !seen.insert(next) {
            continue;
        }
        for index in 0..item_tree(db, next).imports.len() {
            if let Some(target) = resolve_import(db, next, index as u32) {
                stack.push(target);
            }
        }
    }
    false
}

/// Problems with the items of a file: duplicate top-level names and record types, and bad
/// imports.
#[salsa::tracked(returns(ref))]
pub fn item_diagnostics(db: &dyn Db, file: SourceFile) -> Vec<Diagnostic> {
    let tree = item_tree(db, file);
    let mut out = Vec::new();
    for (index, import) in tree.imports.iter().enumerate() {
        let Some(path) = &import.path else { continue };
        let range = import.path_range.unwrap_or(import.range);
        match resolve_import(db, file, index as u32) {
            None => out.push(Diagnostic {
                code: Code::ImportNotFound,
                severity: Code::ImportNotFound.severity(),
                message: format!("cannot find the imported file \"{path}\""),
                file,
                range,
                labels: Vec::new(),
                help: Some(
                    "import paths are relative to the directory of the importing file".to_owned(),
                ),
                fixes: Vec::new(),
            }),
            Some(target) if imports_reach(db, target, file) => out.push(Diagnostic {
                code: Code::ImportCycle,
                severity: Code::ImportCycle.severity(),
                message: format!(
                    "importing \"{path}\" creates a cycle: it leads back to this file"
                ),
                file,
                range,
                labels: Vec::new(),
                help: Some(
                    "move what both files need into a third file that both import".to_owned(),
                ),
                fixes: Vec::new(),
            }),
            Some(_) => {}
        }
    }
    // Functions against functions and top-level variables.
    let mut seen: FxHashMap<SmolStr, syntax::TextRange> = FxHashMap::default();
    for function in &tree.functions {
        let Some(range) = function.name_range else { continue };
        if function.name.is_empty() {
            continue;
        }
        match seen.get(&function.name) {
            Some(&first) => out.push(duplicate(file, &function.name, range, first, "function")),
            None => {
                seen.insert(function.name.clone(), range);
            }
        }
    }
    // Record types against each other: they have a namespace of their own.
    let mut types: FxHashMap<SmolStr, syntax::TextRange> = FxHashMap::default();
    for record in &tree.structs {
        let Some(range) = record.name_range else { continue };
        if record.name.is_empty() {
            continue;
        }
        match types.get(&record.name) {
            Some(&first) => out.push(Diagnostic {
                code: Code::DuplicateItem,
                severity: Code::DuplicateItem.severity(),
                message: format!("the record type `{}` is defined twice", record.name),
                file,
                range,
                labels: vec![crate::diagnostics::Label {
                    file,
                    range: first,
                    message: format!("`{}` first defined here", record.name),
                }],
                help: Some("rename one of them".to_owned()),
                fixes: Vec::new(),
            }),
            None => {
                types.insert(record.name.clone(), range);
            }
        }
    }
    let top = top_level_def(db, file);
    let lowered = body_query(db, top);
    for (local, data) in lowered.body.locals.iter() {
        if data.scope_depth != 0 || data.name.is_empty() {
            continue;
        }
        if let Some(&first) = seen.get(&data.name) {
            let span =
                crate::body::HirSpan { def: top, span: lowered.body.source_map.local(local) };
            let (_, range) = crate::diagnostics::file_range(db, span);
            out.push(duplicate(file, &data.name, range, first, "variable"));
        }
    }
    out
}

fn duplicate(
    file: SourceFile,
    name: &str,
    range: syntax::TextRange,
    first: syntax::TextRange,
    what: &str,
) -> Diagnostic {
    Diagnostic {
        code: Code::DuplicateItem,
        severity: Code::DuplicateItem.severity(),
        message: format!("the {what} `{name}` has the name of a function defined earlier"),
        file,
        range,
        labels: vec![crate::diagnostics::Label {
            file,
            range: first,
            message: format!("function `{name}` defined here"),
        }],
        help: Some("functions share one namespace with top-level variables; rename one".to_owned()),
        fixes: Vec::new(),
    }
}
