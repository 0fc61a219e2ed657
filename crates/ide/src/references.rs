//! Find references: every occurrence of what the name at the cursor refers to, across the files
//! of the database for functions and top-level names, within one body for locals, and within one
//! index statement for index labels.

use hir::DefKind;
use syntax::TextRange;

use crate::{
    FileId, FilePosition, NavigationTarget,
    semantic::{self, Definition, Occurrence},
};

/// One occurrence of a name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Reference {
    pub file: FileId,
    pub range: TextRange,
    /// Whether this is the declaration.
    pub is_decl: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReferenceSearchResult {
    pub declaration: Option<NavigationTarget>,
    /// Every occurrence, the declaration included, sorted by file and position.
    pub references: Vec<Reference>,
}

pub(crate) fn find_references(
    db: &hir::Database,
    position: FilePosition,
) -> Option<ReferenceSearchResult> {
    let occurrence = semantic::occurrence_at(db, position.file, position.offset)?;
    let references = occurrences_of(db, &occurrence.definition);
    let declaration = crate::goto_definition::definition_target(db, &occurrence.definition);
    Some(ReferenceSearchResult { declaration, references })
}

pub(crate) fn highlight_related(db: &hir::Database, position: FilePosition) -> Vec<Reference> {
    let Some(occurrence) = semantic::occurrence_at(db, position.file, position.offset) else {
        return Vec::new();
    };
    occurrences_of(db, &occurrence.definition)
        .into_iter()
        .filter(|r| r.file == position.file)
        .collect()
}

/// Every occurrence of a definition.
pub(crate) fn occurrences_of(db: &hir::Database, definition: &Definition) -> Vec<Reference> {
    let matching = |file: FileId, occurrences: Vec<Occurrence>| -> Vec<Reference> {
        occurrences
            .into_iter()
            .filter(|o| o.definition == *definition)
            .map(|o| Reference { file, range: o.range, is_decl: o.is_decl })
            .collect()
    };
    let mut out = match definition {
        // A field is used wherever its record is: search every file, as for top-level names.
        Definition::Local { def, .. } | Definition::Label { def, .. }
            if !matches!(def.kind(db), DefKind::TopLevel | DefKind::Struct)
                || matches!(definition, Definition::Label { .. }) =>
        {
            matching(FileId(def.file(db)), semantic::def_occurrences(db, *def))
        }
        _ => db
            .files()
            .into_iter()
            .flat_map(|file| matching(FileId(file), semantic::file_occurrences(db, FileId(file))))
            .collect(),
    };
    out.sort_by_key(|r| (r.file, r.range.start()));
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};

    use crate::fixture;

    fn check(text: &str, expect: Expect) {
        let fixture = fixture::load(text);
        let result = fixture.analysis.find_references(fixture.position()).ok().flatten();
        let mut out = String::new();
        for reference in result.map(|r| r.references).unwrap_or_default() {
            let path = fixture.analysis.file_path(reference.file).unwrap_or_default();
            let text = fixture.analysis.file_text(reference.file).unwrap_or_default();
            let line = text[..usize::from(reference.range.start())].matches('\n').count() + 1;
            out.push_str(&format!(
                "{}:{line} `{}`{}\n",
                path.display(),
                &text[reference.range],
                if reference.is_decl { " (declaration)" } else { "" }
            ));
        }
        expect.assert_eq(&out);
    }

    #[test]
    fn local_in_a_function() {
        check(
            "function float f(float x) {\n    float y = x$0 * 2.0;\n    return y + x;\n}\nfloat x = 1.0;\nprint(x);\n",
            expect![[r#"
                /fixture/main.nb:1 `x` (declaration)
                /fixture/main.nb:2 `x`
                /fixture/main.nb:3 `x`
            "#]],
        );
    }

    #[test]
    fn function_across_files() {
        check(
            r#"
//- main.nb
import "lib.nb";
print(square(2.0) + square(3.0));
//- lib.nb
function float square$0(float x) {
    return x * x;
}
function float quad(float x) {
    return square(square(x));
}
"#,
            expect![[r#"
                /fixture/main.nb:2 `square`
                /fixture/main.nb:2 `square`
                /fixture/lib.nb:1 `square` (declaration)
                /fixture/lib.nb:5 `square`
                /fixture/lib.nb:5 `square`
            "#]],
        );
    }

    #[test]
    fn constant_used_as_a_dimension() {
        check(
            "cns int N$0 = 3;\nTensor a[N][2];\nfunction float f(Tensor b[N]) {\n    return sum(b) * N;\n}\n",
            expect![[r#"
                /fixture/main.nb:1 `N` (declaration)
                /fixture/main.nb:2 `N`
                /fixture/main.nb:3 `N`
                /fixture/main.nb:4 `N`
            "#]],
        );
    }

    #[test]
    fn shape_variable() {
        check(
            "function Tensor[n][1] f(Tensor a[n$0][2]) {\n    Tensor b[n][1] = a @ ones([2, 1]);\n    return b * n;\n}\n",
            expect![[r#"
                /fixture/main.nb:1 `n`
                /fixture/main.nb:1 `n` (declaration)
                /fixture/main.nb:2 `n`
                /fixture/main.nb:3 `n`
            "#]],
        );
    }

    #[test]
    fn index_label() {
        check(
            "Tensor A[2][3];\nTensor B[3][4];\nTensor C[2][4];\nC(i,j) = A(i,k$0) * B(k,j);\nC(i,j) = A(i,k) * B(k,j);\n",
            expect![[r#"
                /fixture/main.nb:4 `k`
                /fixture/main.nb:4 `k`
            "#]],
        );
    }

    #[test]
    fn field_across_files() {
        check(
            r#"
//- main.nb
import "lib.nb";
Linear l = Linear { w: zeros([2, 3]), b: zeros([3]) };
print(l.w$0, norm(l));
//- lib.nb
struct Linear {
    Tensor w[n][m];
    Tensor b[m];
}
function float norm(Linear l) {
    return sum(l.w * l.w);
}
"#,
            expect![[r#"
                /fixture/main.nb:2 `w`
                /fixture/main.nb:3 `w`
                /fixture/lib.nb:2 `w` (declaration)
                /fixture/lib.nb:6 `w`
                /fixture/lib.nb:6 `w`
            "#]],
        );
    }
}
