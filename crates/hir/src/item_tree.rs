//! The item tree: a file's functions, tests, record types, imports and top-level statements,
//! with their positions. It is rebuilt on every edit of the file; what depends on one definition
//! reads that definition's position-free [`crate::db::def_source`] instead.

use smol_str::SmolStr;
use syntax::{AstNode, GreenNode, TextRange, TextSize, ast};

use crate::{db::green_eq, literal::unquote};

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ItemTree {
    pub functions: Vec<FunctionItem>,
    pub tests: Vec<TestItem>,
    pub imports: Vec<ImportItem>,
    /// Top-level statements in source order, including those inside a lone outer `{ ... }`.
    pub top_level: Vec<TopLevelItem>,
    /// `struct` declarations: the record types of the file.
    pub structs: Vec<StructItem>,
}

#[derive(Debug, Clone, Eq)]
pub struct StructItem {
    /// The name, empty when the parser found none.
    pub name: SmolStr,
    pub name_range: Option<TextRange>,
    /// The names of the record types its fields name, as written: what the check for recursive
    /// records follows without lowering anything.
    pub field_types: Vec<SmolStr>,
    pub node: GreenNode,
    pub offset: TextSize,
}

#[derive(Debug, Clone, Eq)]
pub struct FunctionItem {
    /// The name, empty when the parser found none.
    pub name: SmolStr,
    pub name_range: Option<TextRange>,
    pub node: GreenNode,
    pub offset: TextSize,
}

#[derive(Debug, Clone, Eq)]
pub struct TestItem {
    pub name: String,
    pub node: GreenNode,
    pub offset: TextSize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportItem {
    /// The path as written, unquoted; `None` when the parser found no string.
    pub path: Option<String>,
    /// The whole `import "...";` item.
    pub range: TextRange,
    /// The string literal, for labels and go-to-definition.
    pub path_range: Option<TextRange>,
}

#[derive(Debug, Clone, Eq)]
pub struct TopLevelItem {
    pub node: GreenNode,
    pub offset: TextSize,
}

impl PartialEq for FunctionItem {
    fn eq(&self, other: &FunctionItem) -> bool {
        self.name == other.name
            && self.name_range == other.name_range
            && self.offset == other.offset
            && green_eq(&self.node, &other.node)
    }
}

impl PartialEq for StructItem {
    fn eq(&self, other: &StructItem) -> bool {
        self.name == other.name
            && self.name_range == other.name_range
            && self.field_types == other.field_types
            && self.offset == other.offset
            && green_eq(&self.node, &other.node)
    }
}

impl PartialEq for TestItem {
    fn eq(&self, other: &TestItem) -> bool {
        self.name == other.name && self.offset == other.offset && green_eq(&self.node, &other.node)
    }
}

impl PartialEq for TopLevelItem {
    fn eq(&self, other: &TopLevelItem) -> bool {
        self.offset == other.offset && green_eq(&self.node, &other.node)
    }
}

impl ItemTree {
    pub fn lower(file: &ast::SourceFile) -> ItemTree {
        let mut tree = ItemTree::default();
        let items: Vec<ast::Item> = file.items().collect();
        // `start -> compound_statement`: a file that is one block is its top level, unwrapped.
        if let [ast::Item::Stmt(ast::Stmt::Block(block))] = items.as_slice() {
            for item in block.items() {
                tree.add(item);
            }
            return tree;
        }
        for item in items {
            tree.add(item);
        }
        tree
    }

    fn add(&mut self, item: ast::Item) {
        let node = item.syntax();
        let green = node.green().into_owned();
        let offset = node.text_range().start();
        match item {
            ast::Item::FnDef(def) => {
                let name = def.name();
                self.functions.push(FunctionItem {
                    name: name.as_ref().map(|n| SmolStr::new(n.text())).unwrap_or_default(),
                    name_range: name.map(|n| n.syntax().text_range()),
                    node: green,
                    offset,
                });
            }
            ast::Item::TestDef(def) => {
                let name = def.string_token().map(|t| unquote(t.text())).unwrap_or_default();
                self.tests.push(TestItem { name, node: green, offset });
            }
            ast::Item::Import(import) => {
                let string = import.string_token();
                self.imports.push(ImportItem {
                    path: string.as_ref().map(|t| unquote(t.text())),
                    range: import.syntax().text_range(),
                    path_range: string.map(|t| t.text_range()),
                });
            }
            ast::Item::Stmt(_) => self.top_level.push(TopLevelItem { node: green, offset }),
            ast::Item::StructDef(def) => {
                let name = def.name();
                let field_types = def
                    .field_defs()
                    .filter_map(|field| match field.ty()? {
                        ast::Type::RecordType(record) => {
                            Some(SmolStr::new(record.name_ref()?.text()))
                        }
                        _ => None,
                    })
                    .collect();
                self.structs.push(StructItem {
                    name: name.as_ref().map(|n| SmolStr::new(n.text())).unwrap_or_default(),
                    name_range: name.map(|n| n.syntax().text_range()),
                    field_types,
                    node: green,
                    offset,
                });
            }
        }
    }
}
