//! Diagnostics: stable codes, the per-definition form queries produce (spans relative to a
//! definition, so that they survive edits elsewhere), and the file form the CLI and editor show.

use std::fmt;

use syntax::{TextRange, TextSize};

use crate::{
    SourceFile,
    body::HirSpan,
    db::{Db, chunk_offset},
};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Severity {
    Error,
    Warning,
}

macro_rules! codes {
    ($($variant:ident = $code:literal, $severity:ident, $title:literal;)*) => {
        /// Every diagnostic code. The strings are stable: `docs/errors.md` explains each one.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Code {
            $($variant,)*
        }

        impl Code {
            pub const ALL: &'static [Code] = &[$(Code::$variant,)*];

            /// `E0204`, `W0001`, ...
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Code::$variant => $code,)*
                }
            }

            pub fn severity(self) -> Severity {
                match self {
                    $(Code::$variant => Severity::$severity,)*
                }
            }

            /// A short title, as the error index heads its section.
            pub fn title(self) -> &'static str {
                match self {
                    $(Code::$variant => $title,)*
                }
            }

            /// Whether a run reports this code (`R0001`, ...), rather than the checker.
            pub fn at_run_time(self) -> bool {
                self.as_str().starts_with('R')
            }

            pub fn from_code(code: &str) -> Option<Code> {
                Code::ALL.iter().copied().find(|c| c.as_str().eq_ignore_ascii_case(code))
            }
        }
    };
}

codes! {
    Syntax = "E0001", Error, "syntax error";
    MissingToken = "E0002", Error, "missing punctuation";
    MisspeltKeyword = "E0003", Error, "misspelt keyword";
    ForeignSyntax = "E0004", Error, "construct from another language";
    UnresolvedName = "E0100", Error, "cannot find a name";
    Redeclaration = "E0101", Error, "name declared twice in one scope";
    TopLevelVariableInFunction = "E0102", Error, "function reads a top-level variable";
    ImportNotFound = "E0103", Error, "imported file not found";
    ImportCycle = "E0104", Error, "import cycle";
    NotCallable = "E0105", Error, "called value is not a function";
    UnknownDimension = "E0106", Error, "unbound name in a dimension";
    DuplicateItem = "E0107", Error, "top-level name defined twice";
    FunctionAsValue = "E0108", Error, "function used as a value";
    ConstantReadsVariable = "E0109", Error, "top-level constant computed from a variable";
    TypeMismatch = "E0200", Error, "mismatched types";
    BroadcastMismatch = "E0201", Error, "shapes do not broadcast";
    MatmulMismatch = "E0202", Error, "inner dimensions of `@` differ";
    MatmulScalar = "E0203", Error, "`@` on a scalar";
    DeclaredShapeMismatch = "E0204", Error, "value does not fit the declared shape";
    TensorCondition = "E0205", Error, "tensor used as a condition";
    InvalidOperand = "E0206", Error, "operator not defined for these operand types";
    InvalidCast = "E0207", Error, "invalid cast";
    ArgumentCount = "E0208", Error, "wrong number of arguments";
    ShapeVarConflict = "E0209", Error, "shape variable bound to two extents";
    IndexOutOfRange = "E0210", Error, "constant index out of range";
    IndexScalar = "E0211", Error, "indexing a value that is not a tensor";
    InvalidAssignTarget = "E0212", Error, "cannot assign to this expression";
    AssignToConstant = "E0213", Error, "write to a `cns` constant";
    CnsWithoutInit = "E0214", Error, "constant without an initializer";
    VarNotDifferentiable = "E0215", Error, "`var` on a non-differentiable type";
    VoidValue = "E0216", Error, "`void` used as a value";
    RejectedOperator = "E0217", Error, "unsupported prefix operator";
    StringValue = "E0218", Error, "string outside a built-in's argument";
    InvalidDimension = "E0219", Error, "invalid dimension";
    RaggedTensorLiteral = "E0220", Error, "tensor literal is not rectangular";
    RankMismatch = "E0221", Error, "wrong number of indices or dimensions";
    InvalidAxis = "E0222", Error, "axis out of range";
    ElementCountMismatch = "E0223", Error, "element counts differ";
    LiteralOutOfRange = "E0224", Error, "literal out of range";
    UndeterminedSize = "E0225", Error, "shape variable that no extent determines";
    InvalidOption = "E0226", Error, "invalid option of a built-in";
    ArgumentShapes = "E0227", Error, "argument shapes do not fit the built-in";
    FormatString = "E0228", Error, "malformed format string";
    FormatArguments = "E0229", Error, "placeholders and values of `format` differ in number";
    MaskShape = "E0230", Error, "mask does not fit the axes it selects from";
    MaskReadAsIndices = "E0231", Error, "mask passed to a parameter that indexes as positions";
    MissingReturn = "E0300", Error, "not every path returns a value";
    ReturnMismatch = "E0301", Error, "`return` does not match the function's type";
    BreakOutsideLoop = "E0302", Error, "`break` or `continue` outside a loop";
    GradOfNonScalar = "E0400", Error, "derivative of a function that does not return a scalar";
    ParamIndexOutOfRange = "E0401", Error, "parameter index out of range";
    TransformTarget = "E0402", Error, "transform applied to something that is not a function";
    TransformNotCalled = "E0403", Error, "transform outside call position";
    GradOfNonVariable = "E0404", Error, "`grad` of something that is not a differentiable variable";
    TransformShape = "E0405", Error, "`jacobian` of a function whose result is not differentiable";
    DerivativeTarget = "E0406", Error, "`derivative` names something that is not a rule";
    DerivativeSignature = "E0407", Error, "derivative rule does not fit the function";
    DerivativeParams = "E0408", Error, "function that cannot have a derivative rule";
    ParamList = "E0409", Error, "malformed list of parameters to differentiate in";
    CheckpointSegment = "E0410", Error, "`checkpoint(f, n)` of a function that is not a segment";
    VmapOperand = "E0411", Error, "`vmap` over a parameter or result without a leading axis to map";
    IndexLabelExtent = "E0500", Error, "index label ranges over two extents";
    IndexLabelRepeated = "E0501", Error, "label repeated on the left of an index statement";
    IndexLabelUnbound = "E0502", Error, "left label missing from the right side";
    IndexLabelCount = "E0503", Error, "label count differs from the tensor's rank";
    EinsumSpec = "E0504", Error, "malformed einsum specification";
    IndexStmtForm = "E0505", Error, "index statement of an unsupported form";
    TupleValue = "E0600", Error, "tuple used as a value";
    TupleArity = "E0601", Error, "destructuring does not match the tuple";
    TransformOfTuple = "E0602", Error, "derivative of a function of several results";
    UnknownField = "E0603", Error, "no field of that name";
    MissingField = "E0604", Error, "record literal without a field";
    DuplicateField = "E0605", Error, "field given twice";
    NotARecord = "E0606", Error, "field of a value that is not a record";
    RecordDefinition = "E0607", Error, "invalid `struct` declaration";
    UnknownType = "E0608", Error, "unknown type name";
    RecordSizes = "E0609", Error, "record type with the wrong sizes";
    RecordOperand = "E0610", Error, "operation that does not apply to records";
    ExactEqualityBranch = "W0001", Warning, "exact equality on a differentiable value guards a branch";
    AmbiguousIntArgument = "W0002", Warning, "`int` literal where a built-in takes an axis or a value";
    IntegerDivisionToFloat = "W0003", Warning, "integer division in `float` arithmetic";
    GradOfUntracked = "W0004", Warning, "gradient of a value no `var` reaches";
    ShadowsBuiltin = "W0005", Warning, "function shadows a built-in";
    UnusedVariable = "W0006", Warning, "unused variable";
    UnusedParameter = "W0007", Warning, "unused parameter";
    UnreadBackward = "W0008", Warning, "`backward` whose gradients are never read";
    UnreachableCode = "W0009", Warning, "unreachable code";
    // Run-time errors: `nabla run` and `nabla test` report these (see `Code::at_run_time`).
    IntegerOverflow = "R0001", Error, "integer overflow";
    DivisionByZero = "R0002", Error, "integer division by zero";
    IntConversion = "R0003", Error, "number out of the range of `int`";
    ConstantBeforeDeclaration = "R0004", Error, "constant read before its declaration ran";
    BroadcastFailure = "R0100", Error, "shapes do not broadcast at run time";
    MatmulFailure = "R0101", Error, "inner dimensions of `@` differ at run time";
    DeclaredShapeFailure = "R0102", Error, "value does not fit the declared shape at run time";
    ElementCountFailure = "R0103", Error, "element counts differ at run time";
    RankFailure = "R0104", Error, "tensor of the wrong rank";
    DimensionFailure = "R0105", Error, "invalid dimension at run time";
    IndexFailure = "R0200", Error, "index out of range";
    AxisFailure = "R0201", Error, "axis out of range at run time";
    EmptyReduction = "R0202", Error, "reduction over no elements";
    LinearAlgebra = "R0300", Error, "matrix without the property an operation needs";
    FileFailure = "R0400", Error, "file cannot be read or written";
    LimitReached = "R0500", Error, "limit of the run reached";
    ReleasedGraph = "R0600", Error, "`backward` through a released graph";
    BackwardWithoutVar = "R0601", Error, "`backward` of a value no `var` reaches";
    GradBeforeBackward = "R0602", Error, "`grad` before any `backward`";
    BackwardInTransform = "R0603", Error, "`backward` inside a differentiated function";
    DerivativeFailure = "R0604", Error, "derivative that cannot be computed";
    EinsumFailure = "R0700", Error, "einsum that does not fit its operands";
    AssertionFailure = "R0800", Error, "assertion failed";
    OptionFailure = "R0801", Error, "invalid option of a built-in at run time";
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A type or kind of thing with its indefinite article, as English wants it: "an int",
/// "a float", "a Tensor[2]".
pub fn a(thing: &impl fmt::Display) -> String {
    let text = thing.to_string();
    let article = match text.chars().next() {
        Some('a' | 'e' | 'i' | 'o' | 'u' | 'A' | 'E' | 'I' | 'O' | 'U') => "an",
        _ => "a",
    };
    format!("{article} {text}")
}

/// A diagnostic as queries produce it: spans relative to definitions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HirDiagnostic {
    pub code: Code,
    pub message: String,
    pub span: HirSpan,
    pub labels: Vec<(HirSpan, String)>,
    pub help: Option<String>,
    pub fixes: Vec<HirFix>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HirFix {
    pub label: String,
    pub edits: Vec<(HirSpan, String)>,
}

impl HirDiagnostic {
    pub fn new(code: Code, span: HirSpan, message: String) -> HirDiagnostic {
        HirDiagnostic { code, message, span, labels: Vec::new(), help: None, fixes: Vec::new() }
    }

    pub fn label(&mut self, span: HirSpan, message: impl Into<String>) -> &mut Self {
        self.labels.push((span, message.into()));
        self
    }

    pub fn help(&mut self, help: impl Into<String>) -> &mut Self {
        self.help = Some(help.into());
        self
    }

    /// A fix that inserts `text` at the start of `at` (an empty span inserts in place).
    pub fn fix_insert(&mut self, label: &str, at: HirSpan, text: &str) -> &mut Self {
        let mut at = at;
        at.span.range = TextRange::empty(at.span.range.start());
        self.fixes.push(HirFix { label: label.to_owned(), edits: vec![(at, text.to_owned())] });
        self
    }

    pub fn fix_replace(&mut self, label: &str, span: HirSpan, text: String) -> &mut Self {
        self.fixes.push(HirFix { label: label.to_owned(), edits: vec![(span, text)] });
        self
    }
}

/// A diagnostic on file ranges: what the CLI prints and the editor shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub code: Code,
    pub severity: Severity,
    pub message: String,
    pub file: SourceFile,
    pub range: TextRange,
    pub labels: Vec<Label>,
    pub help: Option<String>,
    pub fixes: Vec<Fix>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Label {
    pub file: SourceFile,
    pub range: TextRange,
    pub message: String,
}

/// A fix-it: a titled set of text edits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fix {
    pub label: String,
    pub edits: Vec<TextEdit>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextEdit {
    pub file: SourceFile,
    /// The range to replace; empty to insert.
    pub range: TextRange,
    pub insert: String,
}

/// Where a [`HirSpan`] is in its file.
pub fn file_range(db: &dyn Db, span: HirSpan) -> (SourceFile, TextRange) {
    let offset: TextSize = chunk_offset(db, span.def, span.span.chunk);
    let range = span.span.range;
    (span.def.file(db), TextRange::new(offset + range.start(), offset + range.end()))
}

impl HirDiagnostic {
    pub fn to_file_diagnostic(&self, db: &dyn Db) -> Diagnostic {
        let (file, range) = file_range(db, self.span);
        Diagnostic {
            code: self.code,
            severity: self.code.severity(),
            message: self.message.clone(),
            file,
            range,
            labels: self
                .labels
                .iter()
                .map(|(span, message)| {
                    let (file, range) = file_range(db, *span);
                    Label { file, range, message: message.clone() }
                })
                .collect(),
            help: self.help.clone(),
            fixes: self
                .fixes
                .iter()
                .map(|fix| Fix {
                    label: fix.label.clone(),
                    edits: fix
                        .edits
                        .iter()
                        .map(|(span, text)| {
                            let (file, range) = file_range(db, *span);
                            TextEdit { file, range, insert: text.clone() }
                        })
                        .collect(),
                })
                .collect(),
        }
    }
}
