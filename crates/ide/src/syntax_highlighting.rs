//! Semantic tokens: every keyword, literal, comment and operator, and every name classified by
//! what it refers to (function, built-in, parameter, variable, shape variable, index label),
//! with modifiers for declarations, `cns` (read-only) and `var` (differentiable).

use std::ops::BitOr;

use rustc_hash::FxHashMap;
use syntax::{SyntaxKind, TextRange, TextSize};

use crate::{
    FileId,
    semantic::{self, Definition},
};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HighlightedRange {
    pub range: TextRange,
    pub tag: HlTag,
    pub mods: HlMods,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HlTag {
    Function,
    BuiltinFunction,
    Parameter,
    /// A field of a record type, where it is declared and where it is used.
    Field,
    Variable,
    ShapeVariable,
    IndexLabel,
    Keyword,
    Type,
    Number,
    String,
    Comment,
    Operator,
}

/// A set of modifiers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct HlMods(pub u32);

impl HlMods {
    pub const NONE: HlMods = HlMods(0);
    pub const DECLARATION: HlMods = HlMods(1);
    /// `cns` constants and shape variables.
    pub const READONLY: HlMods = HlMods(1 << 1);
    /// `var` leaves of the computational graph.
    pub const DIFFERENTIABLE: HlMods = HlMods(1 << 2);
    /// Built-ins.
    pub const DEFAULT_LIBRARY: HlMods = HlMods(1 << 3);
    /// Every modifier with its name, in bit order.
    pub const ALL: &'static [(HlMods, &'static str)] = &[
        (HlMods::DECLARATION, "declaration"),
        (HlMods::READONLY, "readonly"),
        (HlMods::DIFFERENTIABLE, "differentiable"),
        (HlMods::DEFAULT_LIBRARY, "defaultLibrary"),
    ];

    pub fn contains(self, other: HlMods) -> bool {
        self.0 & other.0 == other.0
    }
}

impl BitOr for HlMods {
    type Output = HlMods;
    fn bitor(self, rhs: HlMods) -> HlMods {
        HlMods(self.0 | rhs.0)
    }
}

pub(crate) fn highlight(db: &hir::Database, file: FileId) -> Vec<HighlightedRange> {
    let names: FxHashMap<TextSize, (TextRange, HlTag, HlMods)> =
        semantic::file_occurrences(db, file)
            .into_iter()
            .map(|o| {
                let (tag, mut mods) = classify(db, &o.definition);
                if o.is_decl {
                    mods = mods | HlMods::DECLARATION;
                }
                (o.range.start(), (o.range, tag, mods))
            })
            .collect();
    let root = hir::parse(db, file.0).syntax_node();
    let mut out = Vec::new();
    for token in root.descendants_with_tokens().filter_map(|e| e.into_token()) {
        let kind = token.kind();
        let range = token.text_range();
        let (tag, mods) = if kind == SyntaxKind::IDENT {
            match names.get(&range.start()) {
                Some((name_range, tag, mods)) if *name_range == range => (*tag, *mods),
                _ => continue,
            }
        } else if is_type_keyword(kind) {
            (HlTag::Type, HlMods::NONE)
        } else if kind.is_keyword() {
            (HlTag::Keyword, HlMods::NONE)
        } else if matches!(kind, SyntaxKind::INT_NUMBER | SyntaxKind::FLOAT_NUMBER) {
            (HlTag::Number, HlMods::NONE)
        } else if matches!(kind, SyntaxKind::STRING | SyntaxKind::CHAR_LITERAL) {
            (HlTag::String, HlMods::NONE)
        } else if kind == SyntaxKind::COMMENT {
            (HlTag::Comment, HlMods::NONE)
        } else if kind.is_punct() && is_operator(kind) {
            (HlTag::Operator, HlMods::NONE)
        } else {
            continue;
        };
        out.push(HighlightedRange { range, tag, mods });
    }
    out
}

fn classify(db: &dyn hir::Db, definition: &Definition) -> (HlTag, HlMods) {
    match definition {
        Definition::Function(_) => (HlTag::Function, HlMods::NONE),
        Definition::Record(_) => (HlTag::Type, HlMods::NONE),
        Definition::Builtin(_) => (HlTag::BuiltinFunction, HlMods::DEFAULT_LIBRARY),
        Definition::Label { .. } => (HlTag::IndexLabel, HlMods::NONE),
        Definition::Local { def, local } => {
            let data = &hir::body(db, *def).locals[*local];
            let mods = match data.qualifier {
                Some(hir::Qualifier::Cns) => HlMods::READONLY,
                Some(hir::Qualifier::Var) => HlMods::DIFFERENTIABLE,
                None => HlMods::NONE,
            };
            match data.kind {
                // A `struct`'s fields are its body's parameters.
                hir::LocalKind::Param if def.kind(db) == hir::DefKind::Struct => {
                    (HlTag::Field, mods)
                }
                hir::LocalKind::Param => (HlTag::Parameter, mods),
                hir::LocalKind::ShapeVar => (HlTag::ShapeVariable, HlMods::READONLY),
                hir::LocalKind::Variable => (HlTag::Variable, mods),
            }
        }
    }
}

fn is_type_keyword(kind: SyntaxKind) -> bool {
    use SyntaxKind::*;
    matches!(kind, INT_KW | FLOAT_KW | CHAR_KW | BOOL_KW | CAPITAL_BOOL_KW | TENSOR_KW | VOID_KW)
}

/// Punctuation that is an operator, not a bracket or separator.
fn is_operator(kind: SyntaxKind) -> bool {
    use SyntaxKind::*;
    !matches!(kind, L_PAREN | R_PAREN | L_BRACK | R_BRACK | L_CURLY | R_CURLY | COMMA | SEMICOLON)
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};

    use crate::{HlMods, fixture};

    fn check(text: &str, expect: Expect) {
        let fixture = fixture::load(text);
        let tokens = fixture.analysis.semantic_tokens(fixture.file).unwrap_or_default();
        let source = fixture.analysis.file_text(fixture.file).unwrap_or_default();
        let mut out = String::new();
        for token in tokens {
            let mut mods: Vec<&str> = HlMods::ALL
                .iter()
                .filter(|(m, _)| token.mods.contains(*m))
                .map(|(_, name)| *name)
                .collect();
            mods.insert(0, "");
            out.push_str(&format!(
                "{:<10} {:?}{}\n",
                &source[token.range],
                token.tag,
                mods.join(" +")
            ));
        }
        expect.assert_eq(&out);
    }

    #[test]
    fn names_by_meaning() {
        check(
            "cns int N = 2;\nfunction float f(Tensor x[n][N]) {\n    return sum(x) * n; // total\n}\nvar Tensor w[2][N] = ones([2, N]);\nprint(f(w));\n",
            expect![[r#"
                cns        Keyword
                int        Type
                N          Variable +declaration +readonly
                =          Operator
                2          Number
                function   Keyword
                float      Type
                f          Function +declaration
                Tensor     Type
                x          Parameter +declaration
                n          ShapeVariable +declaration +readonly
                N          Variable +readonly
                return     Keyword
                sum        BuiltinFunction +defaultLibrary
                x          Parameter
                *          Operator
                n          ShapeVariable +readonly
                // total   Comment
                var        Keyword
                Tensor     Type
                w          Variable +declaration +differentiable
                2          Number
                N          Variable +readonly
                =          Operator
                ones       BuiltinFunction +defaultLibrary
                2          Number
                N          Variable +readonly
                print      BuiltinFunction +defaultLibrary
                f          Function
                w          Variable +differentiable
            "#]],
        );
    }

    #[test]
    fn index_labels() {
        check(
            "Tensor A[2][3];\nTensor B[3];\nB(k) = A(i,k);\n",
            expect![[r#"
                Tensor     Type
                A          Variable +declaration
                2          Number
                3          Number
                Tensor     Type
                B          Variable +declaration
                3          Number
                B          Variable
                k          IndexLabel
                =          Operator
                A          Variable
                i          IndexLabel
                k          IndexLabel
            "#]],
        );
    }

    #[test]
    fn records_fields_and_literals() {
        check(
            "struct Linear {\n    Tensor w[n][m];\n    Tensor b[m];\n}\nfunction float f(Linear l) {\n    return sum(l.w);\n}\nvar Linear p = Linear { w: ones([1, 2]), b: [0, 1] };\nprint(f(p), p.b);\n",
            expect![[r#"
                struct     Keyword
                Linear     Type +declaration
                Tensor     Type
                w          Field +declaration
                n          ShapeVariable +declaration +readonly
                m          ShapeVariable +declaration +readonly
                Tensor     Type
                b          Field +declaration
                m          ShapeVariable +readonly
                function   Keyword
                float      Type
                f          Function +declaration
                Linear     Type
                l          Parameter +declaration
                return     Keyword
                sum        BuiltinFunction +defaultLibrary
                l          Parameter
                .          Operator
                w          Field
                var        Keyword
                Linear     Type
                p          Variable +declaration +differentiable
                =          Operator
                Linear     Type
                w          Field
                :          Operator
                ones       BuiltinFunction +defaultLibrary
                1          Number
                2          Number
                b          Field
                :          Operator
                0          Number
                1          Number
                print      BuiltinFunction +defaultLibrary
                f          Function
                p          Variable +differentiable
                p          Variable +differentiable
                .          Operator
                b          Field
            "#]],
        );
    }
}
