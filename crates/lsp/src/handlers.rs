//! Request handlers: each takes a [`Snapshot`] and the request's parameters, runs on a blocking
//! thread, and answers in protocol types. A document the server does not know, or a position
//! outside it, gets an empty answer; a snapshot cancelled by a newer edit gets
//! [`RequestError::Cancelled`].

use std::{collections::HashMap, sync::Arc};

use ide::{Cancelled, FileId, FilePosition, FileRange, LineIndex};
use tower_lsp::lsp_types as lsp;

use crate::{convert, host::Snapshot};

pub(crate) enum RequestError {
    /// A newer edit cancelled the snapshot.
    Cancelled,
    /// The request cannot be carried out, with a message for the user.
    Failed(String),
}

impl From<Cancelled> for RequestError {
    fn from(_: Cancelled) -> RequestError {
        RequestError::Cancelled
    }
}

pub(crate) type HandlerResult<T> = Result<T, RequestError>;

impl Snapshot {
    /// The file of a URI and its line index: an open document, or a file the database read from
    /// disk (an import); not a document whose text is lost.
    fn file(&self, uri: &lsp::Url) -> HandlerResult<Option<(FileId, Arc<LineIndex>)>> {
        if let Some(document) = self.documents.get(uri) {
            return Ok(Some((document.file, document.line_index.clone())));
        }
        if self.lost.contains(uri) {
            return Ok(None);
        }
        let Some(path) = crate::host::file_path(uri) else { return Ok(None) };
        let Some(file) = self.analysis.file(&path) else { return Ok(None) };
        Ok(Some((file, self.line_index(file)?)))
    }

    fn line_index(&self, file: FileId) -> HandlerResult<Arc<LineIndex>> {
        if let Some(document) = self.documents.values().find(|d| d.file == file) {
            return Ok(document.line_index.clone());
        }
        Ok(Arc::new(LineIndex::new(&self.analysis.file_text(file)?)))
    }

    /// The URI of a file: the open document's, or one made from its path.
    fn url(&self, file: FileId) -> HandlerResult<Option<lsp::Url>> {
        if let Some((uri, _)) = self.documents.iter().find(|(_, d)| d.file == file) {
            return Ok(Some(uri.clone()));
        }
        Ok(lsp::Url::from_file_path(self.analysis.file_path(file)?).ok())
    }

    fn position(
        &self,
        params: &lsp::TextDocumentPositionParams,
    ) -> HandlerResult<Option<(FilePosition, Arc<LineIndex>)>> {
        let Some((file, index)) = self.file(&params.text_document.uri)? else { return Ok(None) };
        let Some(offset) = convert::offset(&index, params.position) else { return Ok(None) };
        Ok(Some((FilePosition { file, offset }, index)))
    }

    fn location(
        &self,
        file: FileId,
        range: ide::TextRange,
    ) -> HandlerResult<Option<lsp::Location>> {
        let Some(uri) = self.url(file)? else { return Ok(None) };
        let index = self.line_index(file)?;
        Ok(Some(lsp::Location { uri, range: convert::range(&index, range) }))
    }

    /// The edits of `change`: as `documentChanges`, with the version of each open document
    /// they were computed for, when the client takes them.
    fn workspace_edit(&self, change: &ide::SourceChange) -> HandlerResult<lsp::WorkspaceEdit> {
        let mut files = Vec::new();
        for (file, edits) in &change.edits {
            let Some(uri) = self.url(*file)? else { continue };
            let index = self.line_index(*file)?;
            let edits: Vec<lsp::TextEdit> =
                edits.iter().map(|e| convert::text_edit(&index, e)).collect();
            files.push((uri, edits));
        }
        if !self.config.document_changes {
            let changes: HashMap<_, _> = files.into_iter().collect();
            return Ok(lsp::WorkspaceEdit { changes: Some(changes), ..Default::default() });
        }
        let document_changes = files
            .into_iter()
            .map(|(uri, edits)| {
                let version = self.documents.get(&uri).map(|d| d.version);
                lsp::TextDocumentEdit {
                    text_document: lsp::OptionalVersionedTextDocumentIdentifier { uri, version },
                    edits: edits.into_iter().map(lsp::OneOf::Left).collect(),
                }
            })
            .collect();
        Ok(lsp::WorkspaceEdit {
            document_changes: Some(lsp::DocumentChanges::Edits(document_changes)),
            ..Default::default()
        })
    }
}

/// The diagnostics of an open document, with the host's revision and the client's version of
/// the text they belong to: the first `limit`, and when there are more, one that counts them.
pub(crate) fn diagnostics(
    snapshot: &Snapshot,
    uri: &lsp::Url,
    limit: usize,
) -> HandlerResult<Option<(u64, i32, Vec<lsp::Diagnostic>)>> {
    let Some(document) = snapshot.documents.get(uri) else { return Ok(None) };
    let index = &document.line_index;
    let all = snapshot.analysis.diagnostics(document.file)?;
    let shown = all.len().min(limit);
    let mut out = Vec::with_capacity(shown + 1);
    for diagnostic in &all[..shown] {
        let mut related = Vec::new();
        for info in &diagnostic.related {
            if let Some(location) = snapshot.location(info.location.file, info.location.range)? {
                related.push(lsp::DiagnosticRelatedInformation {
                    location,
                    message: info.message.clone(),
                });
            }
        }
        let mut message = diagnostic.message.clone();
        if let Some(help) = &diagnostic.help {
            message.push_str("\nhelp: ");
            message.push_str(help);
        }
        out.push(lsp::Diagnostic {
            range: convert::range(index, diagnostic.range),
            severity: Some(convert::severity(diagnostic.severity)),
            code: Some(lsp::NumberOrString::String(diagnostic.code.to_owned())),
            source: Some("nabla".to_owned()),
            message,
            related_information: (!related.is_empty()).then_some(related),
            ..Default::default()
        });
    }
    let omitted = &all[shown..];
    if let Some(first) = omitted.first() {
        let errors = omitted.iter().filter(|d| d.severity == ide::Severity::Error).count();
        let severity = if errors > 0 { ide::Severity::Error } else { ide::Severity::Warning };
        out.push(lsp::Diagnostic {
            range: convert::range(index, first.range),
            severity: Some(convert::severity(severity)),
            source: Some("nabla".to_owned()),
            message: format!(
                "and {} more problems from here on ({errors} errors); only the first {limit} are \
                 shown",
                omitted.len()
            ),
            ..Default::default()
        });
    }
    Ok(Some((document.revision, document.version, out)))
}

pub(crate) fn hover(
    snapshot: Snapshot,
    params: lsp::HoverParams,
) -> HandlerResult<Option<lsp::Hover>> {
    let Some((position, index)) = snapshot.position(&params.text_document_position_params)? else {
        return Ok(None);
    };
    let Some(hover) = snapshot.analysis.hover(position)? else { return Ok(None) };
    Ok(Some(lsp::Hover {
        contents: lsp::HoverContents::Markup(lsp::MarkupContent {
            kind: lsp::MarkupKind::Markdown,
            value: hover.markdown,
        }),
        range: Some(convert::range(&index, hover.range)),
    }))
}

pub(crate) fn completion(
    snapshot: Snapshot,
    params: lsp::CompletionParams,
) -> HandlerResult<Option<lsp::CompletionResponse>> {
    let Some((position, _)) = snapshot.position(&params.text_document_position)? else {
        return Ok(None);
    };
    let items = snapshot.analysis.completions(position)?;
    let items = items
        .into_iter()
        .enumerate()
        .map(|(i, item)| lsp::CompletionItem {
            label: item.label,
            kind: Some(convert::completion_kind(item.kind)),
            detail: item.detail,
            documentation: item.documentation.map(|doc| {
                lsp::Documentation::MarkupContent(lsp::MarkupContent {
                    kind: lsp::MarkupKind::Markdown,
                    value: doc,
                })
            }),
            // Keep the order `ide` chose: innermost names first.
            sort_text: Some(format!("{i:05}")),
            ..Default::default()
        })
        .collect();
    Ok(Some(lsp::CompletionResponse::Array(items)))
}

pub(crate) fn goto_definition(
    snapshot: Snapshot,
    params: lsp::GotoDefinitionParams,
) -> HandlerResult<Option<lsp::GotoDefinitionResponse>> {
    let Some((position, _)) = snapshot.position(&params.text_document_position_params)? else {
        return Ok(None);
    };
    let mut locations = Vec::new();
    for target in snapshot.analysis.goto_definition(position)? {
        if let Some(location) = snapshot.location(target.file, target.focus_range)? {
            locations.push(location);
        }
    }
    Ok((!locations.is_empty()).then_some(lsp::GotoDefinitionResponse::Array(locations)))
}

pub(crate) fn references(
    snapshot: Snapshot,
    params: lsp::ReferenceParams,
) -> HandlerResult<Option<Vec<lsp::Location>>> {
    let Some((position, _)) = snapshot.position(&params.text_document_position)? else {
        return Ok(None);
    };
    let Some(result) = snapshot.analysis.find_references(position)? else { return Ok(None) };
    let mut out = Vec::new();
    for reference in result.references {
        if reference.is_decl && !params.context.include_declaration {
            continue;
        }
        if let Some(location) = snapshot.location(reference.file, reference.range)? {
            out.push(location);
        }
    }
    Ok(Some(out))
}

pub(crate) fn document_highlight(
    snapshot: Snapshot,
    params: lsp::DocumentHighlightParams,
) -> HandlerResult<Option<Vec<lsp::DocumentHighlight>>> {
    let Some((position, index)) = snapshot.position(&params.text_document_position_params)? else {
        return Ok(None);
    };
    let highlights = snapshot
        .analysis
        .highlight_related(position)?
        .into_iter()
        .map(|r| lsp::DocumentHighlight {
            range: convert::range(&index, r.range),
            kind: Some(if r.is_decl {
                lsp::DocumentHighlightKind::WRITE
            } else {
                lsp::DocumentHighlightKind::READ
            }),
        })
        .collect();
    Ok(Some(highlights))
}

pub(crate) fn prepare_rename(
    snapshot: Snapshot,
    params: lsp::TextDocumentPositionParams,
) -> HandlerResult<Option<lsp::PrepareRenameResponse>> {
    let Some((position, index)) = snapshot.position(&params)? else { return Ok(None) };
    match snapshot.analysis.prepare_rename(position)? {
        Ok(range) => Ok(Some(lsp::PrepareRenameResponse::Range(convert::range(&index, range)))),
        Err(error) => Err(RequestError::Failed(error.to_string())),
    }
}

pub(crate) fn rename(
    snapshot: Snapshot,
    params: lsp::RenameParams,
) -> HandlerResult<Option<lsp::WorkspaceEdit>> {
    let Some((position, _)) = snapshot.position(&params.text_document_position)? else {
        return Ok(None);
    };
    match snapshot.analysis.rename(position, &params.new_name)? {
        Ok(change) => Ok(Some(snapshot.workspace_edit(&change)?)),
        Err(error) => Err(RequestError::Failed(error.to_string())),
    }
}

pub(crate) fn signature_help(
    snapshot: Snapshot,
    params: lsp::SignatureHelpParams,
) -> HandlerResult<Option<lsp::SignatureHelp>> {
    let Some((position, _)) = snapshot.position(&params.text_document_position_params)? else {
        return Ok(None);
    };
    let Some(help) = snapshot.analysis.signature_help(position)? else { return Ok(None) };
    let parameters = help
        .parameters
        .iter()
        .map(|range| {
            let start = convert::utf16_len(&help.label[..usize::from(range.start())]);
            let end = convert::utf16_len(&help.label[..usize::from(range.end())]);
            lsp::ParameterInformation {
                label: lsp::ParameterLabel::LabelOffsets([start, end]),
                documentation: None,
            }
        })
        .collect();
    let active = help.active_parameter.map(|a| a as u32);
    // What the arguments so far bind, above the documentation: `n = 8, q = 3` -> `Tensor[6]`.
    let sizes = help.bound_sizes.map(|sizes| match help.result {
        Some(result) => format!("`{sizes}` → `{result}`"),
        None => format!("`{sizes}`"),
    });
    let documentation = match (sizes, help.documentation) {
        (Some(sizes), Some(doc)) => Some(format!("{sizes}\n\n{doc}")),
        (sizes, doc) => sizes.or(doc),
    };
    Ok(Some(lsp::SignatureHelp {
        signatures: vec![lsp::SignatureInformation {
            label: help.label,
            documentation: documentation.map(|doc| {
                lsp::Documentation::MarkupContent(lsp::MarkupContent {
                    kind: lsp::MarkupKind::Markdown,
                    value: doc,
                })
            }),
            parameters: Some(parameters),
            active_parameter: active,
        }],
        active_signature: Some(0),
        active_parameter: active,
    }))
}

pub(crate) fn inlay_hints(
    snapshot: Snapshot,
    params: lsp::InlayHintParams,
) -> HandlerResult<Option<Vec<lsp::InlayHint>>> {
    let Some((file, index)) = snapshot.file(&params.text_document.uri)? else { return Ok(None) };
    let Some(range) = convert::text_range(&index, params.range) else {
        return Ok(Some(Vec::new()));
    };
    let hints = snapshot
        .analysis
        .inlay_hints(file, Some(range))?
        .into_iter()
        .map(|hint| {
            let (kind, padding_left) = match hint.kind {
                ide::InlayKind::Shape => (lsp::InlayHintKind::TYPE, false),
                ide::InlayKind::ShapeBinding => (lsp::InlayHintKind::PARAMETER, true),
            };
            lsp::InlayHint {
                position: convert::position(&index, hint.offset),
                label: lsp::InlayHintLabel::String(hint.label),
                kind: Some(kind),
                text_edits: None,
                tooltip: None,
                padding_left: Some(padding_left),
                padding_right: Some(false),
                data: None,
            }
        })
        .collect();
    Ok(Some(hints))
}

pub(crate) fn semantic_tokens(
    snapshot: Snapshot,
    params: lsp::SemanticTokensParams,
) -> HandlerResult<Option<lsp::SemanticTokensResult>> {
    let Some((file, index)) = snapshot.file(&params.text_document.uri)? else { return Ok(None) };
    let highlights = snapshot.analysis.semantic_tokens(file)?;
    let text = snapshot.analysis.file_text(file)?;
    let data = convert::semantic_tokens(&text, &index, &highlights);
    Ok(Some(lsp::SemanticTokensResult::Tokens(lsp::SemanticTokens { result_id: None, data })))
}

pub(crate) fn document_symbols(
    snapshot: Snapshot,
    params: lsp::DocumentSymbolParams,
) -> HandlerResult<Option<lsp::DocumentSymbolResponse>> {
    let Some((file, index)) = snapshot.file(&params.text_document.uri)? else { return Ok(None) };
    let symbols = snapshot
        .analysis
        .document_symbols(file)?
        .into_iter()
        .map(|node| {
            #[allow(deprecated)]
            lsp::DocumentSymbol {
                name: node.name,
                detail: node.detail,
                kind: convert::symbol_kind(node.kind),
                tags: None,
                deprecated: None,
                range: convert::range(&index, node.full_range),
                selection_range: convert::range(&index, node.focus_range),
                children: None,
            }
        })
        .collect();
    Ok(Some(lsp::DocumentSymbolResponse::Nested(symbols)))
}

pub(crate) fn workspace_symbols(
    snapshot: Snapshot,
    params: lsp::WorkspaceSymbolParams,
) -> HandlerResult<Option<Vec<lsp::SymbolInformation>>> {
    let mut out = Vec::new();
    for target in snapshot.analysis.workspace_symbols(&params.query)? {
        let Some(location) = snapshot.location(target.file, target.focus_range)? else { continue };
        #[allow(deprecated)]
        out.push(lsp::SymbolInformation {
            name: target.name,
            kind: convert::symbol_kind(target.kind),
            tags: None,
            deprecated: None,
            location,
            container_name: target.container,
        });
    }
    Ok(Some(out))
}

pub(crate) fn folding_ranges(
    snapshot: Snapshot,
    params: lsp::FoldingRangeParams,
) -> HandlerResult<Option<Vec<lsp::FoldingRange>>> {
    let Some((file, index)) = snapshot.file(&params.text_document.uri)? else { return Ok(None) };
    let mut out = Vec::new();
    for fold in snapshot.analysis.folding_ranges(file)? {
        let start = convert::position(&index, fold.range.start()).line;
        let mut end = convert::position(&index, fold.range.end()).line;
        // The line of a closing bracket stays visible.
        if matches!(fold.kind, ide::FoldKind::Block | ide::FoldKind::List) {
            end = end.saturating_sub(1);
        }
        if end <= start {
            continue;
        }
        let kind = match fold.kind {
            ide::FoldKind::Comment => Some(lsp::FoldingRangeKind::Comment),
            ide::FoldKind::Imports => Some(lsp::FoldingRangeKind::Imports),
            ide::FoldKind::Region => Some(lsp::FoldingRangeKind::Region),
            ide::FoldKind::Block | ide::FoldKind::List => None,
        };
        out.push(lsp::FoldingRange {
            start_line: start,
            start_character: None,
            end_line: end,
            end_character: None,
            kind,
            collapsed_text: None,
        });
    }
    Ok(Some(out))
}

pub(crate) fn formatting(
    snapshot: Snapshot,
    params: lsp::DocumentFormattingParams,
) -> HandlerResult<Option<Vec<lsp::TextEdit>>> {
    let Some((file, index)) = snapshot.file(&params.text_document.uri)? else { return Ok(None) };
    match snapshot.analysis.format(file)? {
        Ok(edits) => Ok(Some(edits.iter().map(|e| convert::text_edit(&index, e)).collect())),
        // A file with syntax errors is left alone; the diagnostics already say why.
        Err(_) => Ok(None),
    }
}

pub(crate) fn code_actions(
    snapshot: Snapshot,
    params: lsp::CodeActionParams,
) -> HandlerResult<Option<lsp::CodeActionResponse>> {
    let Some((file, index)) = snapshot.file(&params.text_document.uri)? else { return Ok(None) };
    let Some(range) = convert::text_range(&index, params.range) else { return Ok(None) };
    let assists = snapshot.analysis.code_actions(FileRange { file, range })?;
    let single = assists.len() == 1;
    let mut out = Vec::new();
    for assist in assists {
        let diagnostics: Vec<lsp::Diagnostic> = params
            .context
            .diagnostics
            .iter()
            .filter(|d| convert::text_range(&index, d.range) == Some(assist.target.range))
            .cloned()
            .collect();
        out.push(lsp::CodeActionOrCommand::CodeAction(lsp::CodeAction {
            title: assist.label.clone(),
            kind: Some(lsp::CodeActionKind::QUICKFIX),
            diagnostics: (!diagnostics.is_empty()).then_some(diagnostics),
            edit: Some(snapshot.workspace_edit(&assist.change)?),
            is_preferred: Some(single),
            ..Default::default()
        }));
    }
    Ok(Some(out))
}

pub(crate) fn code_lenses(
    snapshot: Snapshot,
    params: lsp::CodeLensParams,
) -> HandlerResult<Option<Vec<lsp::CodeLens>>> {
    let Some(command) = snapshot.config.test_code_lens.clone() else { return Ok(Some(Vec::new())) };
    let uri = params.text_document.uri;
    let Some((file, index)) = snapshot.file(&uri)? else { return Ok(None) };
    let lenses = snapshot
        .analysis
        .runnables(file)?
        .into_iter()
        .map(|runnable| lsp::CodeLens {
            range: convert::range(&index, runnable.range),
            command: Some(lsp::Command {
                title: "▶ Run test".to_owned(),
                command: command.clone(),
                arguments: Some(vec![
                    serde_json::Value::String(uri.to_string()),
                    serde_json::Value::String(runnable.test_name),
                ]),
            }),
            data: None,
        })
        .collect();
    Ok(Some(lenses))
}
