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
mod float_expr;
mod stmt;

use hir::{
    Body, Db, DefId, DefKind, Dim, ExprId, HirSpan, InferenceResult, LocalId, RelSpan, SourceFile,
    Ty,
    body::{LocalKind, Qualifier, ScopeEnd, TypeRef},
};
use rustc_hash::{FxHashMap, FxHashSet};
use syntax::TextSize;

use crate::code::{
    Callable, CheckContext, DimSpec, EntryLayout, EntryVariable, Instr, Operand, Program,
    ShapeCheck, Slot, TargetShape, Unit, VariableKind,
};
use crate::error::RuntimeError;
use crate::value::Value;

type Result<T> = std::result::Result<T, RuntimeError>;

/// How much stack the recursive walks over expressions may use before a new segment is
/// allocated, and how big one is (as in `hir`, whose lowering is recursive the same way).
const STACK_RED_ZONE: usize = 128 * 1024;
const STACK_SEGMENT: usize = 2 * 1024 * 1024;

/// Choices of the lowering that do not change what a program computes.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Whether trees of scalar float operations are compiled into [`Instr::FloatExpr`]
    /// instructions (see [`float_expr`]); off only to compare the two paths in tests.
    pub float_exprs: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options { float_exprs: true }
    }
}

/// Lowers `main` and everything it imports. The files must be free of errors.
pub fn lower_program(db: &dyn Db, main: SourceFile) -> Result<Program> {
    lower_program_with(db, main, Options::default())
}

/// [`lower_program`] with the given [`Options`].
pub fn lower_program_with(db: &dyn Db, main: SourceFile, options: Options) -> Result<Program> {
    lower(db, main, options, None)
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
    lower(db, main, Options::default(), Some(entry))
}

fn lower(db: &dyn Db, main: SourceFile, options: Options, entry: Option<Entry>) -> Result<Program> {
    let files = files_in_order(db, main);
    let mut builder = ProgramBuilder {
        db,
        unit_of: FxHashMap::default(),
        globals: FxHashMap::default(),
        global_names: Vec::new(),
        n_globals: 0,
        callables: Vec::new(),
        callable_index: FxHashMap::default(),
        options,
        entry: entry.map(|entry| EntryBuilder {
            entry,
            main_top: hir::scope::top_level_def(db, main),
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
            };
            if wanted {
                builder.unit_of.insert(def, defs.len() as u32);
                defs.push(def);
            }
        }
        let top = hir::scope::top_level_def(db, file);
        let body = hir::body(db, top);
        for (local, data) in body.locals.iter() {
            let is_constant =
                data.qualifier == Some(Qualifier::Cns) || data.kind == LocalKind::ShapeVar;
            if data.scope_depth == 0 && is_constant {
                builder.globals.insert((top, local), builder.n_globals);
                builder.global_names.push(data.name.to_string());
                builder.n_globals += 1;
                if let Some(entry) = &mut builder.entry {
                    let in_entry = file == main && entry.declared_in_entry(db, top, local);
                    entry.global_files.push((file, in_entry));
                }
            } else if data.scope_depth == 0
                && data.kind == LocalKind::Variable
                && file == main
                && let Some(entry) = &mut builder.entry
            {
                // A session's variable keeps its slot and gets a home global besides.
                let in_entry = entry.declared_in_entry(db, top, local);
                entry.homes.push((local, builder.n_globals, in_entry));
                entry.global_files.push((file, in_entry));
                builder.global_names.push(data.name.to_string());
                builder.n_globals += 1;
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
    units.push(builder.lower_unit(hir::scope::top_level_def(db, main), true)?);
    let imports = files
        .iter()
        .filter(|&&file| file != main)
        .filter_map(|&file| builder.unit_of.get(&hir::scope::top_level_def(db, file)).copied())
        .collect();
    let main_top = hir::scope::top_level_def(db, main);
    let main_unit = builder
        .unit_of
        .get(&main_top)
        .copied()
        .ok_or_else(|| RuntimeError::internal("the main file has no top level"))?;
    let tests = defs
        .iter()
        .filter(|def| def.kind(db) == DefKind::Test)
        .map(|&def| {
            let name = hir::db::item_tree(db, def.file(db))
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
        let count = hir::db::item_tree(db, file).imports.len() as u32;
        if next < count {
            stack.push((file, next + 1));
            if let Some(target) = hir::db::resolve_import(db, file, next)
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
    options: Options,
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
        let mut next: Slot = 0;
        for &param in &body.params {
            places.insert(param, Place::Slot(next));
            next += 1;
        }
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
                    places.insert(local, Place::Slot(next));
                    next += 1;
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
            last_bound: None,
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
                if !matches!(infer.type_of_expr(expr), Ty::Void | Ty::Error) =>
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
        let n_params = body.params.len() as u32;
        let mut unit = Unit {
            name,
            def,
            n_params,
            base_case: Unit::base_case_of(&lowerer.code, n_params),
            n_slots: lowerer.max_slots,
            code: lowerer.code,
            spans: lowerer.spans,
            constants: lowerer.constants,
            checks: lowerer.checks,
            args: lowerer.args,
            indices: lowerer.indices,
            exprs: Vec::new(),
            prologue_end,
            holds_heap: holds_heap(infer),
        };
        if self.options.float_exprs {
            float_expr::compile(&mut unit);
        }
        Ok((unit, variables))
    }
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
    next_temp: Slot,
    max_slots: Slot,
    code: Vec<Instr>,
    spans: Vec<RelSpan>,
    constants: Vec<Value>,
    checks: Vec<ShapeCheck>,
    args: Vec<Operand>,
    indices: Vec<Box<[crate::code::IndexEntry]>>,
    loops: Vec<LoopLabels>,
    function_name: String,
    /// Set while lowering a statement in which a nested assignment or `++` could change a
    /// variable between its read and its use: variables are then read into temporaries, so that
    /// operands are evaluated left to right.
    snapshot: bool,
    /// The last position a label was bound to: an instruction there is a jump target and must
    /// not be fused into the one before it.
    last_bound: Option<u32>,
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
        let slot = self.next_temp;
        self.next_temp += 1;
        self.max_slots = self.max_slots.max(self.next_temp);
        slot
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

    fn index_list(&mut self, entries: Box<[crate::code::IndexEntry]>) -> u32 {
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
        self.last_bound = Some(target);
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
            let kind = match self.infer.type_of_local(local) {
                Ty::Int => VariableKind::Int,
                Ty::Float => VariableKind::Float,
                Ty::Bool => VariableKind::Bool,
                Ty::Char => VariableKind::Char,
                Ty::Tensor(_) => VariableKind::Tensor,
                _ => return Err(RuntimeError::internal("a session variable of no value type")),
            };
            variables.push(EntryVariable { slot, global, kind, in_entry });
        }
        Ok(variables)
    }

    // ----- shapes -----

    /// The shape variable named `name` visible at `at` (the innermost one).
    fn visible_shape_var(&self, name: &str, at: RelSpan) -> Option<DimSpec> {
        let position = ScopeEnd { chunk: at.chunk, offset: at.range.start() };
        let found = self
            .body
            .locals
            .iter()
            .filter(|(local, data)| {
                data.kind == LocalKind::ShapeVar
                    && data.name == name
                    && self.body.source_map.is_visible(*local, position)
            })
            .max_by_key(|(local, data)| (data.scope_depth, local.into_raw().into_u32()))
            .map(|(local, _)| local)?;
        Some(match self.place_of(found).ok()? {
            Place::Slot(slot) => DimSpec::Slot(slot),
            Place::Global(global) => DimSpec::Global(global),
        })
    }

    /// The shape variables a declaration binds fresh: those allocated right after its local.
    fn fresh_shape_vars(&self, local: LocalId) -> Vec<(String, Place)> {
        let mut fresh = Vec::new();
        let mut index = local.into_raw().into_u32() + 1;
        while let Some((id, data)) =
            self.body.locals.iter().find(|(id, _)| id.into_raw().into_u32() == index)
        {
            if data.kind != LocalKind::ShapeVar {
                break;
            }
            if let Ok(place) = self.place_of(id) {
                fresh.push((data.name.to_string(), place));
            }
            index += 1;
        }
        fresh
    }

    /// The run-time form of a declared type's dimensions, binding fresh shape variables on their
    /// first occurrence when `bind` is set.
    fn decl_dims(
        &self,
        local: LocalId,
        at: RelSpan,
        bind: bool,
    ) -> (Vec<DimSpec>, Vec<Option<String>>) {
        let TypeRef::Tensor(dims) = &self.body.locals[local].ty else {
            return (Vec::new(), Vec::new());
        };
        let fresh = self.fresh_shape_vars(local);
        let mut bound: FxHashSet<String> = FxHashSet::default();
        let mut specs = Vec::new();
        let mut names = Vec::new();
        for dim in dims {
            match dim {
                hir::DimRef::Known(n) => {
                    specs.push(DimSpec::Known(usize::try_from(*n).unwrap_or(0)));
                    names.push(None);
                }
                hir::DimRef::Var(name) => {
                    names.push(Some(name.to_string()));
                    let fresh_place = fresh.iter().find(|(n, _)| n == name).map(|(_, p)| *p);
                    let spec = match fresh_place {
                        Some(place) if bind && bound.insert(name.to_string()) => match place {
                            Place::Slot(slot) => DimSpec::BindSlot(slot),
                            Place::Global(global) => DimSpec::BindGlobal(global),
                        },
                        Some(Place::Slot(slot)) => DimSpec::Slot(slot),
                        Some(Place::Global(global)) => DimSpec::Global(global),
                        None => self.visible_shape_var(name, at).unwrap_or(DimSpec::Any),
                    };
                    specs.push(spec);
                }
                hir::DimRef::Error => {
                    specs.push(DimSpec::Any);
                    names.push(None);
                }
            }
        }
        (specs, names)
    }

    /// The run-time form of a type's dimensions, resolving shape variables visible at `at`.
    fn ty_dims(&self, ty: &Ty, at: RelSpan) -> Option<(Vec<DimSpec>, Vec<Option<String>>)> {
        let dims = ty.shape()?.dims()?;
        let specs = dims
            .iter()
            .map(|dim| match dim {
                Dim::Known(n) => DimSpec::Known(usize::try_from(*n).unwrap_or(0)),
                Dim::Var(name) => self.visible_shape_var(name, at).unwrap_or(DimSpec::Any),
                Dim::Unknown => DimSpec::Any,
            })
            .collect();
        let names = dims
            .iter()
            .map(|dim| match dim {
                Dim::Var(name) => Some(name.to_string()),
                _ => None,
            })
            .collect();
        Some((specs, names))
    }

    /// The shape a scalar is broadcast to where a tensor of type `ty` is expected.
    fn target_shape(&self, ty: &Ty, at: Option<RelSpan>) -> TargetShape {
        let Some(dims) = ty.shape().and_then(|shape| shape.dims()) else {
            return TargetShape::Scalar;
        };
        if dims.is_empty() {
            return TargetShape::Scalar;
        }
        let mut specs = Vec::new();
        for dim in dims {
            let spec = match (dim, at) {
                (Dim::Known(n), _) => DimSpec::Known(usize::try_from(*n).unwrap_or(0)),
                (Dim::Var(name), Some(at)) => match self.visible_shape_var(name, at) {
                    Some(spec) => spec,
                    None => return TargetShape::Scalar,
                },
                _ => return TargetShape::Scalar,
            };
            specs.push(spec);
        }
        TargetShape::Dims(specs.into_boxed_slice())
    }

    fn add_check(&mut self, check: ShapeCheck) -> u32 {
        self.checks.push(check);
        (self.checks.len() - 1) as u32
    }

    // ----- functions -----

    /// Checks the arguments' shapes and binds the shape variables of the parameters.
    fn prologue(&mut self) -> Result<u32> {
        let body = self.body;
        let mut bound: FxHashSet<String> = FxHashSet::default();
        for (index, &param) in body.params.iter().enumerate() {
            let data = &body.locals[param];
            let TypeRef::Tensor(dims) = &data.ty else { continue };
            if dims.is_empty() {
                continue;
            }
            let mut specs = Vec::new();
            let mut names = Vec::new();
            for dim in dims {
                match dim {
                    hir::DimRef::Known(n) => {
                        specs.push(DimSpec::Known(usize::try_from(*n).unwrap_or(0)));
                        names.push(None);
                    }
                    hir::DimRef::Var(name) => {
                        let var = self.function_shape_var(name);
                        let spec = match var {
                            Some(slot) if bound.insert(name.to_string()) => DimSpec::BindSlot(slot),
                            Some(slot) => DimSpec::Slot(slot),
                            None => DimSpec::Any,
                        };
                        specs.push(spec);
                        names.push(Some(name.to_string()));
                    }
                    hir::DimRef::Error => {
                        specs.push(DimSpec::Any);
                        names.push(None);
                    }
                }
            }
            let declared = hir::infer::ty_of_ref(&data.ty).to_string();
            let check = self.add_check(ShapeCheck {
                context: CheckContext::Argument { function: self.function_name.clone(), index },
                declared,
                names,
                dims: specs,
                ranked: true,
            });
            let span = self.body.source_map.local(param);
            self.emit(Instr::CheckShape { slot: index as Slot, check }, span);
        }
        Ok(self.here())
    }

    /// The slot of a shape variable of this function's signature.
    fn function_shape_var(&self, name: &str) -> Option<Slot> {
        self.body
            .locals
            .iter()
            .find(|(_, data)| {
                data.kind == LocalKind::ShapeVar && data.scope_depth == 0 && data.name == name
            })
            .and_then(|(local, _)| match self.places.get(&local) {
                Some(Place::Slot(slot)) => Some(*slot),
                _ => None,
            })
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
    let heap = |ty: &Ty| matches!(ty, Ty::Float | Ty::Tensor(_));
    infer.expr_types.values().any(heap) || infer.local_types.values().any(heap)
}

/// Whether `value` is statically known to have the shape `declared` demands.
fn shape_proven(declared: &Ty, value: &Ty) -> bool {
    let (Some(declared), Some(value)) = (declared.shape(), value.shape()) else {
        // A scalar stored into a tensor is broadcast to the declared shape.
        return !value.is_tensor();
    };
    match (declared.dims(), value.dims()) {
        (None, _) => true,
        (Some(_), None) => false,
        (Some(a), Some(b)) => {
            a.len() == b.len()
                && a.iter().zip(b).all(|pair| match pair {
                    (Dim::Known(x), Dim::Known(y)) => x == y,
                    (Dim::Var(x), Dim::Var(y)) => x == y,
                    _ => false,
                })
        }
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
