//! The token inventory of Nabla and the lowering of `nabla.ungram` into a model of AST nodes.
//!
//! Tokens are listed here rather than in the ungrammar because the grammar only names them; the
//! generator needs their kind names and their spelling for the `T![..]` macro.

use std::collections::BTreeSet;

use ungrammar::{Grammar, Rule};

/// Punctuation and operators: spelling and kind name.
pub const PUNCT: &[(&str, &str)] = &[
    ("(", "L_PAREN"),
    (")", "R_PAREN"),
    ("[", "L_BRACK"),
    ("]", "R_BRACK"),
    ("{", "L_CURLY"),
    ("}", "R_CURLY"),
    (",", "COMMA"),
    ("...", "DOT3"),
    ("..", "DOT2"),
    (".", "DOT"),
    (";", "SEMICOLON"),
    (":", "COLON"),
    ("?", "QUESTION"),
    ("+", "PLUS"),
    ("-", "MINUS"),
    ("*", "STAR"),
    ("/", "SLASH"),
    ("%", "PERCENT"),
    ("@", "AT"),
    ("=", "EQ"),
    ("!", "BANG"),
    ("~", "TILDE"),
    ("<", "L_ANGLE"),
    (">", "R_ANGLE"),
    ("&", "AMP"),
    ("|", "PIPE"),
    ("^", "CARET"),
    ("++", "PLUS2"),
    ("--", "MINUS2"),
    ("<<", "SHL"),
    (">>", "SHR"),
    ("<=", "LTEQ"),
    (">=", "GTEQ"),
    ("==", "EQ2"),
    ("!=", "NEQ"),
    ("&&", "AMP2"),
    ("||", "PIPE2"),
    ("+=", "PLUSEQ"),
    ("-=", "MINUSEQ"),
    ("*=", "STAREQ"),
    ("/=", "SLASHEQ"),
    ("%=", "PERCENTEQ"),
    ("@=", "ATEQ"),
    ("<<=", "SHLEQ"),
    (">>=", "SHREQ"),
    ("&=", "AMPEQ"),
    ("^=", "CARETEQ"),
    ("|=", "PIPEEQ"),
];

/// Keywords of `language.md` section 1. `Bool` is spelled with a capital and gets its own kind.
pub const KEYWORDS: &[&str] = &[
    "char",
    "int",
    "float",
    "bool",
    "Bool",
    "Tensor",
    "void",
    "var",
    "cns",
    "if",
    "elif",
    "else",
    "loop",
    "break",
    "continue",
    "return",
    "function",
    "sizeof",
    "true",
    "false",
    "test",
    "import",
    "none",
    "struct",
    "derivative",
];

/// Literal tokens: the name the ungrammar uses and the kind name.
pub const LITERALS: &[(&str, &str)] = &[
    ("int_number", "INT_NUMBER"),
    ("float_number", "FLOAT_NUMBER"),
    ("char_literal", "CHAR_LITERAL"),
    ("string", "STRING"),
];

/// Other tokens: the name the ungrammar uses (if any) and the kind name.
pub const TOKENS: &[(&str, &str)] =
    &[("ident", "IDENT"), ("", "WHITESPACE"), ("", "COMMENT"), ("", "ERROR")];

pub fn keyword_kind(keyword: &str) -> String {
    match keyword {
        "Bool" => "CAPITAL_BOOL_KW".to_owned(),
        _ => format!("{}_KW", keyword.to_uppercase()),
    }
}

/// The kind name of a token as the ungrammar spells it.
pub fn token_kind(token: &str) -> Option<String> {
    if let Some((_, kind)) = PUNCT.iter().find(|(text, _)| *text == token) {
        return Some((*kind).to_owned());
    }
    if KEYWORDS.contains(&token) {
        return Some(keyword_kind(token));
    }
    LITERALS
        .iter()
        .chain(TOKENS)
        .find(|(name, _)| !name.is_empty() && *name == token)
        .map(|(_, kind)| (*kind).to_owned())
}

/// The name of a token accessor: `l_paren_token`, `function_token`, `string_token`.
pub fn token_accessor(token: &str) -> Option<String> {
    let kind = token_kind(token)?;
    let base = match kind.strip_suffix("_KW") {
        Some(keyword) => keyword.to_lowercase(),
        None => kind.to_lowercase(),
    };
    Some(format!("{base}_token"))
}

pub struct AstSrc {
    pub nodes: Vec<AstNodeSrc>,
    pub enums: Vec<AstEnumSrc>,
}

pub struct AstNodeSrc {
    pub doc: Vec<String>,
    pub name: String,
    pub fields: Vec<Field>,
}

pub struct AstEnumSrc {
    pub doc: Vec<String>,
    pub name: String,
    pub variants: Vec<String>,
}

#[derive(PartialEq, Eq)]
pub enum Field {
    Token(String),
    Node { name: String, ty: String, many: bool },
}

impl Field {
    pub fn method_name(&self) -> String {
        match self {
            Field::Token(token) => {
                token_accessor(token).unwrap_or_else(|| format!("{token}_token"))
            }
            Field::Node { name, .. } => name.clone(),
        }
    }
}

pub fn lower(grammar: &Grammar) -> Result<AstSrc, String> {
    let mut nodes = Vec::new();
    let mut enums = Vec::new();
    for node in grammar.iter() {
        let data = &grammar[node];
        let rule = &data.rule;
        if let Some(variants) = lower_enum(grammar, rule) {
            enums.push(AstEnumSrc { doc: Vec::new(), name: data.name.clone(), variants });
            continue;
        }
        let mut fields = Vec::new();
        lower_rule(grammar, rule, None, &mut fields)?;
        // The list idiom `A (',' A)*` is one repeated field, not a single `A` beside a list.
        let listed: BTreeSet<String> = fields
            .iter()
            .filter_map(|field| match field {
                Field::Node { ty, many: true, .. } => Some(ty.clone()),
                _ => None,
            })
            .collect();
        fields.retain(|field| match field {
            Field::Node { ty, many: false, .. } => !listed.contains(ty),
            _ => true,
        });
        // A node type that occurs more than once cannot be told apart by kind: its accessors
        // (`lhs`, `rhs`, `then_branch`) are written by hand.
        let mut seen = BTreeSet::new();
        let mut repeated = BTreeSet::new();
        for field in &fields {
            if let Field::Node { ty, many: false, .. } = field
                && !seen.insert(ty.clone())
            {
                repeated.insert(ty.clone());
            }
        }
        fields.retain(|field| match field {
            Field::Node { ty, many: false, .. } => !repeated.contains(ty),
            _ => true,
        });
        let mut names = BTreeSet::new();
        fields.retain(|field| names.insert(field.method_name()));
        nodes.push(AstNodeSrc { doc: Vec::new(), name: data.name.clone(), fields });
    }
    Ok(AstSrc { nodes, enums })
}

fn lower_enum(grammar: &Grammar, rule: &Rule) -> Option<Vec<String>> {
    let Rule::Alt(alternatives) = rule else { return None };
    alternatives
        .iter()
        .map(|alternative| match alternative {
            Rule::Node(node) => Some(grammar[*node].name.clone()),
            _ => None,
        })
        .collect()
}

fn lower_rule(
    grammar: &Grammar,
    rule: &Rule,
    label: Option<&str>,
    acc: &mut Vec<Field>,
) -> Result<(), String> {
    match rule {
        Rule::Node(node) => {
            let ty = grammar[*node].name.clone();
            let name = field_name(label.map(str::to_owned).unwrap_or_else(|| to_snake_case(&ty)));
            acc.push(Field::Node { name, ty, many: false });
        }
        Rule::Token(token) => {
            let text = grammar[*token].name.clone();
            if token_kind(&text).is_none() {
                return Err(format!("unknown token '{text}' in nabla.ungram"));
            }
            acc.push(Field::Token(text));
        }
        Rule::Rep(inner) => match repeated_node(inner) {
            Some((inner_label, node)) => {
                let ty = grammar[node].name.clone();
                let name = match inner_label.or(label) {
                    Some(label) => label.to_owned(),
                    None => pluralize(&to_snake_case(&ty)),
                };
                acc.push(Field::Node { name, ty, many: true });
            }
            None => lower_rule(grammar, inner, label, acc)?,
        },
        Rule::Labeled { label, rule } => {
            // Labelled alternatives of tokens (`op:(...)`) are read by hand.
            if !matches!(**rule, Rule::Alt(_)) {
                lower_rule(grammar, rule, Some(label), acc)?;
            }
        }
        Rule::Seq(rules) => {
            for rule in rules {
                lower_rule(grammar, rule, label, acc)?;
            }
        }
        Rule::Alt(rules) => {
            // A choice of tokens has no single accessor; a choice of nodes gives one per node.
            for rule in rules {
                if !matches!(rule, Rule::Token(_)) {
                    lower_rule(grammar, rule, label, acc)?;
                }
            }
        }
        Rule::Opt(inner) => lower_rule(grammar, inner, label, acc)?,
    }
    Ok(())
}

pub fn to_snake_case(name: &str) -> String {
    let mut out = String::new();
    for (i, ch) in name.chars().enumerate() {
        if ch.is_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(ch.to_ascii_lowercase());
    }
    out
}

pub fn to_upper_snake_case(name: &str) -> String {
    to_snake_case(name).to_uppercase()
}

fn pluralize(name: &str) -> String {
    if let Some(stem) = name.strip_suffix('y') {
        format!("{stem}ies")
    } else if name.ends_with('h') || name.ends_with('s') {
        format!("{name}es")
    } else {
        format!("{name}s")
    }
}

/// A field name that is a Rust keyword gets the conventional spelling (`ty`) or a trailing `_`.
fn field_name(name: String) -> String {
    match name.as_str() {
        "type" => "ty".to_owned(),
        "else" | "loop" | "if" | "break" | "continue" | "return" | "fn" | "match" => {
            format!("{name}_")
        }
        _ => name,
    }
}

/// The node repeated by `A*` or by the list idiom `(',' A)*`, with its label if it has one.
fn repeated_node(rule: &Rule) -> Option<(Option<&str>, ungrammar::Node)> {
    match rule {
        Rule::Node(node) => Some((None, *node)),
        Rule::Labeled { label, rule } => match &**rule {
            Rule::Node(node) => Some((Some(label.as_str()), *node)),
            _ => None,
        },
        Rule::Seq(rules) => rules.last().and_then(repeated_node),
        _ => None,
    }
}
