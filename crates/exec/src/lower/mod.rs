//! Lowering checked HIR into the register code of [`crate::code`].
//!
//! A program is the main file and, transitively, the files it imports. Every function of those
//! files, every test of the main file and every file's top level becomes a [`Unit`]. Within a unit,
//! each local gets a slot of the frame (parameters first), except the top-level constants and
//! shape variables of a file, which live in global slots because functions of any importing file
//! may read them. Temporaries take the slots above the locals and are reused statement by
//! statement. Instructions are chosen from the types inference proved, so the interpreter never
//! looks anything up by name.
//!
//! The program must have passed the checker: lowering reports anything it cannot lower as an
//! internal error instead of guessing.

mod builtin;
mod expr;
mod hoist;
mod record;
mod stmt;

use std::rc::Rc;

use hir::{
    Body, Db, DefId, DefKind, Dim, ExprId, HirSpan, InferenceResult, LocalId, LocalKind, Qualifier,
    RelSpan, Shape, SizeExpr, SizeVar, SourceFile, Ty, TypeRef,
};
use rustc_hash::{FxHashMap, FxHashSet};
use syntax::TextSize;

use crate::code::{
    Callable, CheckContext, DimSpec, EntryLayout, EntryVariable, Instr, Operand, Program,
    ShapeCheck, SizeNames, SizePlace, SizeSpec, Slot, SolveSpec, TargetShape, Unit, VariableKind,
};
use crate::error::RuntimeError;
use crate::value::Value;

type Result<T> = std::result::Result<T, RuntimeError>;

/// How much stack the recursive walks over expressions may use before a new segment is
/// allocated, and how big one is (as in `hir`, whose lowering is recursive the same way).
const STACK_RED_ZONE: usize = 128 * 1024;
const STACK_SEGMENT: usize = 2 * 1024 * 1024;

/// Lowers `main` and everything it imports. The files must be free of errors.
pub fn lower_program(db: &dyn Db, main: SourceFile) -> Result<Program> {
    lower(db, main, None)
}

/// The part of a session's source that runs next: the main file's top-level statements that
/// start at or after `from` (the earlier ones ran as earlier entries).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Where the entry starts in the main file.
    pub from: TextSize,
    /// Whether the main unit returns the value of the entry's last statement when that is an
    /// expression statement (a REPL prints it).
    pub returns_value: bool,
}

/// Lowers `main` as the next entry of a session (see [`crate::session`]): its top level runs
/// only `entry`'s statements, and keeps its variables in the homes of the program's
/// [`crate::code::EntryLayout`]. The files must be free of errors.
pub fn lower_entry(db: &dyn Db, main: SourceFile, entry: Entry) -> Result<Program> {
    lower(db, main, Some(entry))
}

fn lower(db: &dyn Db, main: SourceFile, entry: Option<Entry>) -> Result<Program> {
    let files = files_in_order(db, main);
    let mut builder = ProgramBuilder {
        db,
        unit_of: FxHashMap::default(),
        globals: FxHashMap::default(),
        global_names: Vec::new(),
        n_globals: 0,
        callables: Vec::new(),
        callable_index: FxHashMap::default(),
        entry: entry.map(|entry| EntryBuilder {
            entry,
            main_top: hir::top_level_def(db, main),
            homes: Vec::new(),
            global_files: Vec::new(),
            returns_value: false,
        }),
    };
    // Number every unit first, so that calls can name units not lowered yet.
    let mut defs: Vec<DefId> = Vec::new();
    for &file in &files {
        for def in hir::all_defs(db, file) {
            let wanted = match def.kind(db) {
                DefKind::Function | DefKind::TopLevel => true,
                DefKind::Test => file == main,
                // A record type has no code.
                DefKind::Struct => false,
            };
            if wanted {
                builder.unit_of.insert(def, defs.len() as u32);
                defs.push(def);
            }
        }
        let top = hir::top_level_def(db, file);
        let body = hir::body(db, top);
        for (local, data) in body.locals.iter() {
            let is_constant =
                data.qualifier == Some(Qualifier::Cns) || data.kind == LocalKind::ShapeVar;
            if data.scope_depth == 0 && is_constant {
                // A record constant takes a global for each of its leaves.
                builder.globals.insert((top, local), builder.n_globals);
                let ty = hir::infer(db, top).type_of_local(local);
                let in_entry = builder
                    .entry
                    .as_ref()
                    .map(|entry| file == main && entry.declared_in_entry(db, top, local));
                for name in leaf_names(db, &data.name, ty) {
                    builder.global_names.push(name);
                    builder.n_globals += 1;
                    if let (Some(entry), Some(in_entry)) = (&mut builder.entry, in_entry) {
                        entry.global_files.push((file, in_entry));
                    }
                }
            } else if data.scope_depth == 0
                && data.kind == LocalKind::Variable
                && file == main
                && let Some(entry) = &mut builder.entry
            {
                // A session's variable keeps its slot and gets a home global besides (a record,
                // one for each leaf).
                let in_entry = entry.declared_in_entry(db, top, local);
                entry.homes.push((local, builder.n_globals, in_entry));
                let ty = hir::infer(db, top).type_of_local(local);
                for name in leaf_names(db, &data.name, ty) {
                    entry.global_files.push((file, in_entry));
                    builder.global_names.push(name);
                    builder.n_globals += 1;
                }
            }
        }
    }
    let mut units = Vec::with_capacity(defs.len() + 1);
    let mut variables = Vec::new();
    for &def in &defs {
        let constants_only = def.kind(db) == DefKind::TopLevel && def.file(db) != main;
        let (unit, entry_variables) = builder.lower_unit_with(def, constants_only)?;
        units.push(unit);
        variables.extend(entry_variables);
    }
    let main_constants = units.len() as u32;
    units.push(builder.lower_unit(hir::top_level_def(db, main), true)?);
    let imports = files
        .iter()
        .filter(|&&file| file != main)
        .filter_map(|&file| builder.unit_of.get(&hir::top_level_def(db, file)).copied())
        .collect();
    let main_top = hir::top_level_def(db, main);
    let main_unit = builder
        .unit_of
        .get(&main_top)
        .copied()
        .ok_or_else(|| RuntimeError::internal("the main file has no top level"))?;
    let tests = defs
        .iter()
        .filter(|def| def.kind(db) == DefKind::Test)
        .map(|&def| {
            let name = hir::item_tree(db, def.file(db))
                .tests
                .get(def.index(db) as usize)
                .map(|t| t.name.clone())
                .unwrap_or_default();
            (name, builder.unit_of[&def])
        })
        .collect();
    Ok(Program {
        units,
        callables: builder.callables,
        globals: builder.n_globals,
        global_names: builder.global_names,
        imports,
        main: main_unit,
        main_constants,
        tests,
        entry: builder.entry.map(|entry| EntryLayout {
            globals: entry.global_files,
            variables,
            returns_value: entry.returns_value,
        }),
    })
}

/// The main file and the files it imports, each after everything it imports.
fn files_in_order(db: &dyn Db, main: SourceFile) -> Vec<SourceFile> {
    let mut order = Vec::new();
    let mut seen = FxHashSet::default();
    // An explicit stack of (file, next import to visit): import chains can be long.
    let mut stack = vec![(main, 0u32)];
    seen.insert(main);
    while let Some((file, next)) = stack.pop() {
        let count = hir::item_tree(db, file).imports.len() as u32;
        if next < count {
            stack.push((file, next + 1));
            if let Some(target) = hir::resolve_import(db, file, next)
                && seen.insert(target)
            {
                stack.push((target, 0));
            }
        } else {
            order.push(file);
        }
    }
    order
}

/// What lowering shares across units.
struct ProgramBuilder<'db> {
    db: &'db dyn Db,
    unit_of: FxHashMap<DefId, u32>,
    globals: FxHashMap<(DefId, LocalId), u32>,
    global_names: Vec<String>,
    n_globals: u32,
    callables: Vec<Callable>,
    callable_index: FxHashMap<Callable, u32>,
    /// Set when lowering a session's entry.
    entry: Option<EntryBuilder>,
}

/// What lowering a session's entry adds (see [`lower_entry`]).
struct EntryBuilder {
    entry: Entry,
    main_top: DefId,
    /// The main file's top-level variables: local, home global, and whether the entry declares
    /// it.
    homes: Vec<(LocalId, u32, bool)>,
    /// For each global: its file, and whether the entry declares it.
    global_files: Vec<(SourceFile, bool)>,
    /// Whether the main unit returns the value of the entry's last statement.
    returns_value: bool,
}

impl EntryBuilder {
    /// Whether a top-level local of the main file is declared by the entry.
    fn declared_in_entry(&self, db: &dyn Db, top: DefId, local: LocalId) -> bool {
        let span = hir::body(db, top).source_map.local(local);
        hir::file_range(db, HirSpan { def: top, span }).1.start() >= self.entry.from
    }

    /// Whether a top-level statement of the main file belongs to the entry.
    fn runs(&self, db: &dyn Db, stmt: hir::StmtId) -> bool {
        let span = hir::body(db, self.main_top).source_map.stmt(stmt);
        hir::file_range(db, HirSpan { def: self.main_top, span }).1.start() >= self.entry.from
    }
}

impl ProgramBuilder<'_> {
    fn intern_callable(&mut self, callable: Callable) -> u32 {
        if let Some(&index) = self.callable_index.get(&callable) {
            return index;
        }
        let index = self.callables.len() as u32;
        self.callables.push(callable.clone());
        self.callable_index.insert(callable, index);
        index
    }

    fn lower_unit(&mut self, def: DefId, constants_only: bool) -> Result<Unit> {
        Ok(self.lower_unit_with(def, constants_only)?.0)
    }

    /// Lowers a unit, and for a session's main unit also says where its variables live.
    fn lower_unit_with(
        &mut self,
        def: DefId,
        constants_only: bool,
    ) -> Result<(Unit, Vec<EntryVariable>)> {
        let db = self.db;
        let body = hir::body(db, def);
        let infer = hir::infer(db, def);
        let mut places = FxHashMap::default();
        let mut next = 0;
        // A record takes a slot for each of its leaves (see `record`).
        let width = |local: LocalId| hir::width(db, infer.type_of_local(local)) as u32;
        for &param in &body.params {
            places.insert(param, Place::Slot(Slot::new(next)));
            next += width(param);
        }
        let n_params = next;
        let top = def.kind(db) == DefKind::TopLevel;
        for (local, _) in body.locals.iter() {
            if places.contains_key(&local) {
                continue;
            }
            match self.globals.get(&(def, local)) {
                Some(&global) if top => {
                    places.insert(local, Place::Global(global));
                }
                _ => {
                    places.insert(local, Place::Slot(Slot::new(next)));
                    next += width(local);
                }
            }
        }
        let name = match def.kind(db) {
            DefKind::Function => hir::signature(db, def).name.to_string(),
            _ => hir::def_name(db, def),
        };
        let mut lowerer = UnitLowerer {
            builder: self,
            def,
            body,
            infer,
            places,
            next_temp: next,
            max_slots: next,
            code: Vec::new(),
            spans: Vec::new(),
            constants: Vec::new(),
            checks: Vec::new(),
            args: Vec::new(),
            indices: Vec::new(),
            loops: Vec::new(),
            function_name: name.clone(),
            snapshot: false,
            struct_sizes: FxHashMap::default(),
            hoisted: Vec::new(),
            counters: Vec::new(),
            hoisting: false,
        };
        let prologue_end = match def.kind(db) {
            DefKind::Function => lowerer.prologue()?,
            _ => 0,
        };
        let entry = match &lowerer.builder.entry {
            Some(entry) if entry.main_top == def && !constants_only => Some(entry.entry),
            _ => None,
        };
        let variables = match entry {
            Some(_) => lowerer.entry_variables()?,
            None => Vec::new(),
        };
        // A session's entry starts by loading the earlier entries' variables.
        for variable in variables.iter().filter(|v| !v.in_entry) {
            let span = RelSpan { chunk: 0, range: Default::default() };
            lowerer.emit(Instr::LoadGlobal { dst: variable.slot, global: variable.global }, span);
        }
        let mut root = body.root.clone();
        if entry.is_some() {
            let builder = lowerer.builder.entry.as_ref();
            root.retain(|&stmt| builder.is_some_and(|b| b.runs(db, stmt)));
        }
        let value = match (entry, root.last().map(|&stmt| &body.stmts[stmt])) {
            (Some(Entry { returns_value: true, .. }), Some(&hir::Stmt::Expr(expr)))
                if !matches!(
                    infer.type_of_expr(expr),
                    Ty::Void | Ty::Error | Ty::Tuple(_) | Ty::Record(_)
                ) =>
            {
                root.pop();
                Some(expr)
            }
            _ => None,
        };
        for stmt in root {
            // Only constants are evaluated for importers and tests: the rest of a top level is a
            // program of its own.
            let constant = match body.stmts[stmt] {
                hir::Stmt::Decl { local, .. } => {
                    body.locals[local].qualifier == Some(Qualifier::Cns)
                }
                hir::Stmt::TupleDecl { ref locals, .. } => {
                    locals.iter().any(|&local| body.locals[local].qualifier == Some(Qualifier::Cns))
                }
                _ => false,
            };
            if constants_only && !constant {
                continue;
            }
            lowerer.stmt(stmt)?;
        }
        let end = lowerer.end_span();
        let result = match value {
            Some(expr) => Some(lowerer.expr(expr, Dest::Any)?),
            None => None,
        };
        if let (Some(built), Some(_)) = (&mut lowerer.builder.entry, result) {
            built.returns_value = true;
        }
        // A session's entry ends by storing every variable in its home.
        for variable in &variables {
            let src = Operand::copy(variable.slot);
            lowerer.emit(Instr::StoreGlobal { global: variable.global, src }, end);
        }
        // Falling off the end returns nothing; jumps past the last statement land here too.
        lowerer.emit(Instr::Return { src: result }, end);
        let results = match def.kind(db) {
            DefKind::Function => hir::width(db, &hir::ty_of_ref(&hir::signature(db, def).ret)),
            _ => 1,
        } as u32;
        let unit = Unit {
            name,
            def,
            n_params,
            results,
            n_slots: lowerer.max_slots,
            code: lowerer.code,
            spans: lowerer.spans,
            constants: lowerer.constants,
            checks: lowerer.checks,
            args: lowerer.args,
            indices: lowerer.indices,
            prologue_end,
            holds_heap: holds_heap(infer),
        };
        Ok((unit, variables))
    }
}

/// The names of the globals of a top-level variable `name` of type `ty`: `name`, or for a record
/// one per leaf, `net.l1.w`.
fn leaf_names(db: &dyn Db, name: &str, ty: &Ty) -> Vec<String> {
    hir::leaves(db, ty)
        .into_iter()
        .map(|leaf| match leaf.path.is_empty() {
            true => name.to_owned(),
            false => format!("{name}.{}", leaf.dotted()),
        })
        .collect()
}

/// Where a local lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    Slot(Slot),
    Global(u32),
}

/// Where an expression's value should go: anywhere (a temporary, or the variable it names) or a
/// given slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dest {
    Any,
    Slot(Slot),
}

/// Jumps waiting for their target.
#[derive(Default)]
struct Pending(Vec<usize>);

struct LoopLabels {
    breaks: Pending,
    continues: Pending,
}

struct UnitLowerer<'a, 'db> {
    builder: &'a mut ProgramBuilder<'db>,
    def: DefId,
    body: &'db Body,
    infer: &'db InferenceResult,
    places: FxHashMap<LocalId, Place>,
    /// The index of the next temporary, and the number of slots used so far.
    next_temp: u32,
    max_slots: u32,
    code: Vec<Instr>,
    spans: Vec<RelSpan>,
    constants: Vec<Value>,
    checks: Vec<ShapeCheck>,
    args: Vec<Operand>,
    indices: Vec<crate::code::IndexChain>,
    loops: Vec<LoopLabels>,
    function_name: String,
    /// Set while lowering a statement in which a nested assignment or `++` could change a
    /// variable between its read and its use: variables are then read into temporaries, so that
    /// operands are evaluated left to right.
    snapshot: bool,
    /// The size parameters of a `struct` whose literal is being checked, in temporaries of this
    /// unit (see `record_literal`).
    struct_sizes: FxHashMap<SizeVar, Slot>,
    /// The loops being lowered, outermost first, each with the work hoisted in front of it
    /// (see [`hoist::Hoisted`]).
    hoisted: Vec<hoist::Hoisted>,
    /// The ranges of the counters of the counted loops being lowered, innermost last (see
    /// [`hoist::CounterRange`]).
    counters: Vec<hoist::CounterRange>,
    /// Set while the code of a hoisted expression is lowered: nothing inside it is hoisted.
    hoisting: bool,
}

/// A number an instruction loads: `LoadInt` or `LoadFloat` (by its bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Number {
    Int(i64),
    Float(u64),
}

impl Number {
    fn load(self, dst: Slot) -> Instr {
        match self {
            Number::Int(value) => Instr::LoadInt { dst, value },
            Number::Float(bits) => Instr::LoadFloat { dst, value: f64::from_bits(bits) },
        }
    }
}

impl<'db> UnitLowerer<'_, 'db> {
    fn db(&self) -> &'db dyn Db {
        self.builder.db
    }

    fn emit(&mut self, instr: Instr, span: RelSpan) -> usize {
        self.code.push(instr);
        self.spans.push(span);
        self.code.len() - 1
    }

    fn temp(&mut self) -> Slot {
        loop {
            let slot = Slot::new(self.next_temp);
            self.next_temp += 1;
            self.max_slots = self.max_slots.max(self.next_temp);
            if !self.is_hoisted(slot) {
                return slot;
            }
        }
    }

    /// The slot a result goes to.
    fn dst(&mut self, dest: Dest) -> Slot {
        match dest {
            Dest::Any => self.temp(),
            Dest::Slot(slot) => slot,
        }
    }

    /// The operand that reads a result written to `slot` for `dest`.
    fn result(dest: Dest, slot: Slot) -> Operand {
        match dest {
            Dest::Any => Operand::take(slot),
            Dest::Slot(_) => Operand::copy(slot),
        }
    }

    /// Puts an operand where `dest` wants it.
    fn place_in(&mut self, operand: Operand, dest: Dest, span: RelSpan) -> Operand {
        match dest {
            Dest::Slot(slot) if slot != operand.slot() => {
                self.emit(Instr::Copy { dst: slot, src: operand }, span);
                Operand::copy(slot)
            }
            _ => operand,
        }
    }

    fn arg_range(&mut self, operands: &[Operand]) -> crate::code::ArgRange {
        let start = self.args.len() as u32;
        self.args.extend(operands.iter().copied());
        crate::code::ArgRange { start, len: operands.len() as u32 }
    }

    fn index_list(&mut self, entries: crate::code::IndexChain) -> u32 {
        self.indices.push(entries);
        (self.indices.len() - 1) as u32
    }

    fn constant(&mut self, value: Value) -> u32 {
        self.constants.push(value);
        (self.constants.len() - 1) as u32
    }

    fn here(&self) -> u32 {
        self.code.len() as u32
    }

    fn bind(&mut self, pending: Pending) {
        let target = self.here();
        for at in pending.0 {
            set_target(&mut self.code[at], target);
        }
    }

    fn span_of(&self, expr: ExprId) -> RelSpan {
        self.body.source_map.expr(expr)
    }

    fn ty(&self, expr: ExprId) -> Ty {
        self.infer.type_of_expr(expr).clone()
    }

    fn end_span(&self) -> RelSpan {
        let last = self.body.root.last().map(|&stmt| self.body.source_map.stmt(stmt));
        match last {
            Some(span) => RelSpan { chunk: span.chunk, range: syntax_end(span.range) },
            None => RelSpan { chunk: 0, range: Default::default() },
        }
    }

    fn internal(&self, what: &str, span: RelSpan) -> RuntimeError {
        RuntimeError::internal(format!("cannot lower {what}"))
            .with_span(HirSpan { def: self.def, span })
    }

    fn place_of(&self, local: LocalId) -> Result<Place> {
        self.places
            .get(&local)
            .copied()
            .ok_or_else(|| RuntimeError::internal("a local without a slot"))
    }

    fn global_of(&self, def: DefId, local: LocalId) -> Result<u32> {
        self.builder
            .globals
            .get(&(def, local))
            .copied()
            .ok_or_else(|| RuntimeError::internal("a global without a slot"))
    }

    fn unit_of(&self, def: DefId) -> Result<u32> {
        self.builder
            .unit_of
            .get(&def)
            .copied()
            .ok_or_else(|| RuntimeError::internal("a call of a function that was not lowered"))
    }

    /// The source text of a span of this unit, for messages.
    fn source_text(&self, span: RelSpan) -> String {
        let db = self.db();
        let (file, range) = hir::file_range(db, HirSpan { def: self.def, span });
        let text = file.text(db);
        text.get(usize::from(range.start())..usize::from(range.end()))
            .unwrap_or_default()
            .to_owned()
    }

    /// The slots and homes of a session's top-level variables (see [`EntryLayout`]).
    fn entry_variables(&self) -> Result<Vec<EntryVariable>> {
        let homes = self.builder.entry.as_ref().map(|entry| entry.homes.clone());
        let mut variables = Vec::new();
        for (local, global, in_entry) in homes.unwrap_or_default() {
            let Place::Slot(slot) = self.place_of(local)? else {
                return Err(RuntimeError::internal("a session variable without a slot"));
            };
            let ty = self.infer.type_of_local(local);
            for (i, leaf) in hir::leaves(self.db(), ty).into_iter().enumerate() {
                let kind = match leaf.ty {
                    Ty::Int => VariableKind::Int,
                    Ty::Float => VariableKind::Float,
                    Ty::Bool => VariableKind::Bool,
                    Ty::Char => VariableKind::Char,
                    Ty::Tensor(_) => VariableKind::Tensor,
                    _ => return Err(RuntimeError::internal("a session variable of no value type")),
                };
                let (slot, global) = (slot + i as u32, global + i as u32);
                variables.push(EntryVariable { slot, global, kind, in_entry });
            }
        }
        Ok(variables)
    }

    // ----- shapes -----

    /// Where the value of a size variable lives: a slot of this unit, or a global (a top-level
    /// shape variable or constant, which `hir` resolved to its file's top-level body).
    fn size_place(&self, var: &SizeVar) -> Result<SizePlace> {
        if let Some(&slot) = self.struct_sizes.get(var) {
            return Ok(SizePlace::Slot(slot));
        }
        if var.def == self.def {
            return Ok(match self.place_of(var.local)? {
                Place::Slot(slot) => SizePlace::Slot(slot),
                Place::Global(global) => SizePlace::Global(global),
            });
        }
        self.global_of(var.def, var.local).map(SizePlace::Global)
    }

    /// Whether a size variable is a shape variable bound from an extent, which is never
    /// negative, rather than an `int` read as a size.
    fn is_shape_var(&self, var: &SizeVar) -> bool {
        let body = if var.def == self.def { self.body } else { hir::body(self.db(), var.def) };
        let data = &body.locals[var.local];
        data.kind == LocalKind::ShapeVar && !data.name.is_empty()
    }

    fn size_expr(&self, expr: &SizeExpr<SizeVar>) -> Result<SizeExpr<SizePlace>> {
        let mut failure = None;
        let mapped = expr.map(&mut |var| match self.size_place(var) {
            Ok(place) => SizeExpr::Var(place),
            Err(error) => {
                failure = Some(error);
                SizeExpr::Const(0)
            }
        });
        match failure {
            Some(error) => Err(error),
            None => Ok(mapped),
        }
    }

    /// The run-time form of an extent to check against.
    fn dim_spec(&self, dim: &Dim) -> Result<DimSpec> {
        Ok(match dim {
            Dim::Known(n) => DimSpec::Known(
                usize::try_from(*n).map_err(|_| RuntimeError::internal("a negative extent"))?,
            ),
            Dim::Unknown => DimSpec::Any,
            Dim::Expr(expr) => match expr.written() {
                // A shape variable holds a size; an `int` read as a size may be negative.
                SizeExpr::Var(var) if self.is_shape_var(var) => match self.size_place(var)? {
                    SizePlace::Slot(slot) => DimSpec::Slot(slot),
                    SizePlace::Global(global) => DimSpec::Global(global),
                },
                written => DimSpec::Size(Rc::new(SizeSpec {
                    expr: self.size_expr(written)?,
                    text: dim.to_string().into_boxed_str(),
                    vars: self
                        .size_vars(std::slice::from_ref(dim))?
                        .into_iter()
                        .map(|(n, p)| (n.into_boxed_str(), p))
                        .collect(),
                })),
            },
        })
    }

    /// The variables of some extents by name, for messages.
    fn size_vars(&self, dims: &[Dim]) -> Result<SizeNames> {
        let mut out: SizeNames = Vec::new();
        for dim in dims {
            if let Dim::Expr(expr) = dim {
                for var in expr.written().leaves() {
                    let entry = (var.name.to_string(), self.size_place(var)?);
                    if !out.contains(&entry) {
                        out.push(entry);
                    }
                }
            }
        }
        Ok(out)
    }

    /// The checks of values against declared shapes, in the order they run: each extent binds
    /// the variable `fresh` says it determines (as [`hir::binding_plan`] decides) or is
    /// checked. Every shape gets one check of all its extents; an extent whose variables a later
    /// one binds is checked again, alone, after them.
    fn binding_checks(
        &self,
        shapes: &[&[Dim]],
        fresh: &dyn Fn(&SizeVar) -> bool,
    ) -> Result<Vec<(usize, Vec<DimSpec>)>> {
        let mut owner = Vec::new();
        let mut flat = Vec::new();
        for (i, dims) in shapes.iter().enumerate() {
            for (axis, dim) in dims.iter().enumerate() {
                owner.push((i, axis));
                flat.push(dim.clone());
            }
        }
        let (steps, undetermined) = hir::binding_plan(&flat, fresh);
        if !undetermined.is_empty() {
            return Err(RuntimeError::internal("a shape variable that no extent determines"));
        }
        let mut checks: Vec<(usize, Vec<DimSpec>)> = Vec::new();
        let mut last: Option<(usize, usize)> = None;
        for step in steps {
            let (shape, axis) = owner[step.index];
            let spec = match &step.bind {
                None => self.dim_spec(&flat[step.index])?,
                Some((var, linear)) => {
                    let place = self.size_place(var)?;
                    match (linear.coefficient == hir::Ratio::ONE, &linear.rest) {
                        (true, Dim::Known(0)) => match place {
                            SizePlace::Slot(slot) => DimSpec::BindSlot(slot),
                            SizePlace::Global(global) => DimSpec::BindGlobal(global),
                        },
                        (_, rest) => {
                            let rest = rest.to_expr().ok_or_else(|| {
                                RuntimeError::internal("an unknown size in a binding")
                            })?;
                            DimSpec::Solve(Rc::new(SolveSpec {
                                var: place,
                                coefficient: linear.coefficient,
                                rest: self.size_expr(&rest)?,
                                text: flat[step.index].to_string().into_boxed_str(),
                                name: var.name.as_str().into(),
                            }))
                        }
                    }
                }
            };
            let continues = last.is_some_and(|(s, a)| s == shape && a < axis);
            if !continues {
                checks.push((shape, vec![DimSpec::Any; shapes[shape].len()]));
            }
            if let Some((_, specs)) = checks.last_mut() {
                specs[axis] = spec;
            }
            last = Some((shape, axis));
        }
        Ok(checks)
    }

    /// The checks of a declaration's value against its declared extents, binding the shape
    /// variables its initializer binds when `bind` is set.
    fn decl_checks(&self, local: LocalId, bind: bool) -> Result<Vec<Vec<DimSpec>>> {
        let TypeRef::Tensor(dims) = &self.body.locals[local].ty else { return Ok(Vec::new()) };
        let def = self.def;
        let fresh = |var: &SizeVar| {
            bind && var.def == def && self.body.locals[var.local].bound_by == Some(local)
        };
        let checks = self.binding_checks(&[dims.as_slice()], &fresh)?;
        Ok(checks.into_iter().map(|(_, specs)| specs).collect())
    }

    /// The extents a declaration without an initializer gives its zeros.
    fn decl_dims(&self, local: LocalId) -> Result<Vec<DimSpec>> {
        let TypeRef::Tensor(dims) = &self.body.locals[local].ty else { return Ok(Vec::new()) };
        dims.iter().map(|dim| self.dim_spec(dim)).collect()
    }

    /// The run-time form of a type's dimensions, with the names of their variables.
    fn ty_dims(&self, ty: &Ty) -> Result<Option<(Vec<DimSpec>, SizeNames)>> {
        let Some(dims) = ty.shape().and_then(Shape::dims) else { return Ok(None) };
        let specs = dims.iter().map(|dim| self.dim_spec(dim)).collect::<Result<Vec<_>>>()?;
        Ok(Some((specs, self.size_vars(dims)?)))
    }

    /// The shape a scalar is broadcast to where a tensor of type `ty` is expected. The sizes of
    /// a type of this unit are read where they live; a callee's parameter type (`own` unset)
    /// gives its known extents only, since its shape variables have no values in the caller.
    fn target_shape(&self, ty: &Ty, own: bool) -> Result<TargetShape> {
        let Some(dims) = ty.shape().and_then(|shape| shape.dims()) else {
            return Ok(TargetShape::Scalar);
        };
        let unknown = |dim: &Dim| match dim {
            Dim::Known(_) => false,
            Dim::Expr(_) => !own,
            Dim::Unknown => true,
        };
        if dims.is_empty() || dims.iter().any(unknown) {
            return Ok(TargetShape::Scalar);
        }
        let specs = dims.iter().map(|dim| self.dim_spec(dim)).collect::<Result<Vec<_>>>()?;
        Ok(TargetShape::Dims(specs.into_boxed_slice()))
    }

    fn add_check(&mut self, check: ShapeCheck) -> u32 {
        self.checks.push(check);
        (self.checks.len() - 1) as u32
    }

    // ----- functions -----

    /// Checks the arguments' shapes and binds the shape variables of the parameters: those of
    /// a record parameter's tensor leaves too, each in its slot.
    fn prologue(&mut self) -> Result<u32> {
        let body = self.body;
        let db = self.db();
        // Each tensor the parameters hold: its slot, its declared shape, the parameter, and
        // the field it is, for a record.
        let mut slots: Vec<(Slot, Vec<Dim>, usize, Option<String>)> = Vec::new();
        for (index, &param) in body.params.iter().enumerate() {
            let Place::Slot(slot) = self.place_of(param)? else {
                return Err(RuntimeError::internal("a parameter without a slot"));
            };
            match &body.locals[param].ty {
                TypeRef::Tensor(dims) => slots.push((slot, dims.clone(), index, None)),
                TypeRef::Record(_) => {
                    let ty = hir::ty_of_ref(&body.locals[param].ty);
                    for (i, leaf) in hir::leaves(db, &ty).into_iter().enumerate() {
                        let dims = leaf.ty.shape().and_then(Shape::dims).unwrap_or(&[]).to_vec();
                        slots.push((slot + i as u32, dims, index, Some(leaf.dotted())));
                    }
                }
                _ => slots.push((slot, Vec::new(), index, None)),
            }
        }
        let shapes: Vec<&[Dim]> = slots.iter().map(|(_, dims, _, _)| dims.as_slice()).collect();
        for (i, specs) in self.binding_checks(&shapes, &|_| true)? {
            let (slot, ref dims, index, ref field) = slots[i];
            let param = body.params[index];
            let declared = match field {
                Some(field) => format!("{} (field `{field}`)", Ty::tensor(dims.clone())),
                None => hir::ty_of_ref(&body.locals[param].ty).to_string(),
            };
            let check = self.add_check(ShapeCheck {
                context: CheckContext::Argument { function: self.function_name.clone(), index },
                declared,
                vars: self.size_vars(shapes[i])?,
                dims: specs,
                ranked: true,
            });
            let span = self.body.source_map.local(param);
            self.emit(Instr::CheckShape { slot, check }, span);
        }
        Ok(self.here())
    }

    /// Whether an assignment or `++` sits inside `expr` below its root.
    fn nested_effects(&self, expr: ExprId, root: bool) -> bool {
        stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, || self.nested_effects_inner(expr, root))
    }

    fn nested_effects_inner(&self, expr: ExprId, root: bool) -> bool {
        let effect =
            matches!(self.body.exprs[expr], hir::Expr::Assign { .. } | hir::Expr::IncDec { .. });
        if effect && !root {
            return true;
        }
        self.body.expr_children(expr).into_iter().any(|child| self.nested_effects(child, false))
    }

    fn is_var(&self, local: LocalId) -> bool {
        self.body.locals[local].qualifier == Some(Qualifier::Var)
    }
}

/// Whether any value of a body may need releasing: tensors, and floats (a float tracked at
/// several levels of differentiation is boxed).
fn holds_heap(infer: &InferenceResult) -> bool {
    let heap = |ty: &Ty| matches!(ty, Ty::Float | Ty::Tensor(_) | Ty::Record(_));
    infer.expr_types.values().any(heap) || infer.local_types.values().any(heap)
}

/// Whether the checker proved that `value` has the shape `declared` demands, so that storing it
/// needs no run-time check.
fn shape_proven(declared: &Ty, value: &Ty) -> bool {
    match (declared.shape(), value.shape()) {
        (Some(declared), Some(value)) => hir::shapes_proven_equal(declared, value),
        // A scalar stored into a tensor is broadcast to the declared shape.
        _ => !value.is_tensor(),
    }
}

fn set_target(instr: &mut Instr, to: u32) {
    if let Some(target) = instr.target_mut() {
        *target = to;
    }
}

fn syntax_end(range: syntax::TextRange) -> syntax::TextRange {
    syntax::TextRange::empty(range.end())
}
