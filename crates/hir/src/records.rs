//! Records: the fields of a record type and its leaves.
//!
//! A `struct` is a definition ([`crate::DefKind::Struct`]) whose body is lowered as a function's
//! parameters are: each field is a parameter, and the names its extents introduce are shape
//! variables of the `struct`, its size parameters (in order of first appearance; a field of a
//! record type written without sizes, `Linear l2;`, introduces hidden ones, `l2.n`). A record
//! type [`RecordTy`] gives each size parameter a size, so a field's type is the field's declared
//! type with the size parameters replaced by them: fields get their shapes from the same size
//! variables and the same substitution as a call's result does.
//!
//! The leaves of a value are its fields flattened depth-first, down to the fields that are not
//! records: what the engine keeps in consecutive slots, differentiates and prints.

use smol_str::SmolStr;

use crate::{
    DefId, LocalId,
    body::{LocalKind, body_query},
    db::Db,
    infer::{call::substitute, ty_of_ref},
    ty::{Dim, RecordTy, SizeVar, Ty},
};

/// One field of a record type, with its type for the record's sizes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordField {
    pub name: SmolStr,
    /// The field's local in the `struct`'s body (a parameter), for its declaration.
    pub local: LocalId,
    pub ty: Ty,
}

/// One leaf of a value: the names of the fields that lead to it (none for a value that is not a
/// record) and its type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leaf {
    pub path: Vec<SmolStr>,
    pub ty: Ty,
}

impl Leaf {
    /// `l1.w`: the path joined with dots.
    pub fn dotted(&self) -> String {
        self.path.join(".")
    }
}

/// The size parameters of a `struct`, in order.
pub fn size_params(db: &dyn Db, def: DefId) -> Vec<SizeVar> {
    let body = &body_query(db, def).body;
    body.locals
        .iter()
        .filter(|(_, data)| data.kind == LocalKind::ShapeVar)
        .map(|(local, data)| SizeVar { def, local, name: data.name.clone() })
        .collect()
}

/// The fields of a record type, in declaration order, typed for its sizes (a size the record
/// does not give is unknown).
pub fn record_fields(db: &dyn Db, record: &RecordTy) -> Vec<RecordField> {
    let body = &body_query(db, record.def).body;
    let substitution: Vec<(SizeVar, Dim)> = size_params(db, record.def)
        .into_iter()
        .enumerate()
        .map(|(i, var)| (var, record.sizes.get(i).cloned().unwrap_or(Dim::Unknown)))
        .collect();
    body.params
        .iter()
        .map(|&local| {
            let data = &body.locals[local];
            let ty = substitute(&ty_of_ref(&data.ty), &substitution);
            RecordField { name: data.name.clone(), local, ty }
        })
        .collect()
}

/// The record type of a `struct` whose sizes are its own size parameters: the type of a record
/// literal before its fields bind them.
pub fn generic_record(db: &dyn Db, def: DefId) -> RecordTy {
    let name = crate::def_name(db, def);
    let sizes = size_params(db, def).into_iter().map(Dim::var).collect();
    RecordTy { def, name: name.into(), sizes }
}

/// The leaves of a value of type `ty`, depth-first: one, with an empty path, for a value that is
/// not a record; the elements' leaves in order for a tuple.
pub fn leaves(db: &dyn Db, ty: &Ty) -> Vec<Leaf> {
    let mut out = Vec::new();
    let mut path = Vec::new();
    push_leaves(db, ty, &mut path, &mut out);
    out
}

fn push_leaves(db: &dyn Db, ty: &Ty, path: &mut Vec<SmolStr>, out: &mut Vec<Leaf>) {
    match ty {
        Ty::Record(record) => {
            for field in record_fields(db, record) {
                path.push(field.name);
                push_leaves(db, &field.ty, path, out);
                path.pop();
            }
        }
        Ty::Tuple(elements) => {
            for element in elements {
                push_leaves(db, element, path, out);
            }
        }
        other => out.push(Leaf { path: path.clone(), ty: other.clone() }),
    }
}

/// How many leaves a value of type `ty` has: the slots it takes.
pub fn width(db: &dyn Db, ty: &Ty) -> usize {
    match ty {
        Ty::Record(_) | Ty::Tuple(_) => leaves(db, ty).len(),
        _ => 1,
    }
}

/// Where field `name` of a record of type `record` starts among its leaves, with the field.
pub fn field_offset(db: &dyn Db, record: &RecordTy, name: &str) -> Option<(usize, RecordField)> {
    let mut offset = 0;
    for field in record_fields(db, record) {
        if field.name == name {
            return Some((offset, field));
        }
        offset += width(db, &field.ty);
    }
    None
}

/// Whether the `struct` `from` contains a record of type `to`, directly or through its fields'
/// record types, read from the item trees: the check that keeps a recursive record from making
/// the lowering of its `struct` depend on itself.
pub(crate) fn struct_reaches(db: &dyn Db, from: DefId, to: DefId) -> bool {
    let mut stack = vec![from];
    let mut seen = rustc_hash::FxHashSet::default();
    while let Some(def) = stack.pop() {
        if def == to {
            return true;
        }
        if !seen.insert(def) {
            continue;
        }
        let file = def.file(db);
        let tree = crate::db::item_tree(db, file);
        let Some(item) = tree.structs.get(def.index(db) as usize) else { continue };
        let types = crate::scope::record_types(db, file);
        stack.extend(item.field_types.iter().filter_map(|name| types.get(name).copied()));
    }
    false
}
