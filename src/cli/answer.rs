//! `dshq answer ID`: answer a request with flags or a whole Answer document; with no
//! answer flags on a terminal, the interactive screen ([`super::interactive`]).
//!
//! Flags: `--select LABEL` (repeatable), `--custom TEXT`, `--edit FILE` (approve the
//! proposal as edited: edit-then-approve), `--skip`, and `--question QID` to
//! start the flags of another question in a batch: `--question db --select Postgres
//! --question note --skip`. Without `--lease` a transient lease is registered, used and
//! released inside the same transaction, so it can never outlive the command.

use std::path::PathBuf;

use clap::ArgMatches;

use super::{default_provider_name, interactive, Ctx};
use crate::app;
use crate::error::{Error, Result};
use crate::files::safe_read;
use crate::output::{emit, outcome_text};
use crate::protocol::answer::parse_answer;
use crate::protocol::check::DEFAULT_MAX_REQUEST_BYTES;
use crate::protocol::edit;
use crate::protocol::{Answer, AnswerItem};

/// What `dshq answer --help` says about the interactive screen after the flags.
const SCREEN_HELP: &str = "\
With no answer flags, on a terminal: the reviewer's screen.
Keys on a question: 1-9 pick an option (in a multi-select: tick or untick it; Space too),
↑↓ and Enter pick, e writes Other (or a plan's decline feedback, or in a multi-select text
added to the ticked options) in $EDITOR, s skips,
l leaves the request for later, i shows the asking agent's context, q quits, Esc opens a
menu (back, skip, cancel the request, later, quit). Nothing is sent before y at the
\"Send ...? (y/N)\" step; Enter alone there means no. Ctrl-C stops (exit 130).
The session registers the context's lease (or uses --lease, which it never releases) and
releases it on every way out. After --idle-release without a key it releases it early, so
another reviewer can take the context; the next key takes it back, or, when another
provider took the context meanwhile, ends with DUPLICATE_PROVIDER (exit 5).";

/// Arguments of `dshq answer`.
#[derive(Debug, clap::Args)]
#[command(after_long_help = SCREEN_HELP)]
pub struct Args {
    /// The request id. Without it (interactive only), walk the context's pending requests.
    pub id: Option<String>,
    /// Start the flags of question QID (for requests with several questions).
    #[arg(long = "question", value_name = "QID")]
    pub question: Vec<String>,
    /// Select an option by its label (repeatable for multi-select).
    #[arg(long = "select", value_name = "LABEL")]
    pub select: Vec<String>,
    /// Free text: overrides the selection in single-select, supplements it in multi-select.
    #[arg(long = "custom", value_name = "TEXT")]
    pub custom: Vec<String>,
    /// Approve the question's proposal as edited: the edited text from FILE (`-` for
    /// stdin). For a plan review (approved by it: the approve label is selected when
    /// no --select is given) or a free-text question the asker made `editable`. One
    /// final newline the proposal does not end with is dropped (editors add one).
    #[arg(long = "edit", value_name = "FILE")]
    pub edit: Vec<String>,
    /// Skip the question (nothing selected, no custom text).
    #[arg(long = "skip", action = clap::ArgAction::Append, num_args = 0, default_missing_value = "true")]
    pub skip: Vec<bool>,
    /// A whole Answer document (`{"answers": [...]}`) from a file, or `-` for stdin.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["question", "select", "custom", "skip", "edit"])]
    pub answers: Option<PathBuf>,
    /// The provider lease token; without it a transient lease is taken and released.
    #[arg(long, env = "DSHQ_LEASE", hide_env_values = true)]
    pub lease: Option<String>,
    /// Provider name for a transient lease (default $USER).
    #[arg(long)]
    pub name: Option<String>,
    /// Answer for PERSON, who is away and named you their delegate (`dshq away`): recorded
    /// as "you for PERSON" (NOT_DELEGATE when you are not their delegate now).
    #[arg(long = "for", value_name = "PERSON", requires = "id")]
    pub for_person: Option<String>,
    /// Interactive, without an id: which requests to walk (and, with --follow, to pick
    /// up while waiting): the filters of `list` and `watch`. One --context (a session
    /// holds one context's lease; default: the given lease's, else `default`).
    #[command(flatten)]
    pub filters: super::filter::Filters,
    /// Interactive, without an id: when the queue is empty, wait for new requests (ring
    /// the bell when one arrives) instead of ending.
    #[arg(long, conflicts_with = "id")]
    pub follow: bool,
    /// Interactive: the ttl of the session's lease (heartbeated every ttl/3).
    #[arg(long, default_value = "1m", value_parser = super::parse_lease_ttl)]
    pub ttl: std::time::Duration,
    /// Interactive: after this long without a key, release the session's lease (recorded
    /// as a release; the request on screen goes back to pending) so another reviewer can
    /// take the context; the next key takes it back, or, when another provider holds the
    /// context by then, ends with DUPLICATE_PROVIDER (exit 5). Between 1s and 24h. A lease
    /// given with --lease is never released.
    #[arg(long, value_name = "DUR", default_value = "5m", value_parser = super::parse_idle_release)]
    pub idle_release: std::time::Duration,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Flag {
    Question(String),
    Select(String),
    Custom(String),
    /// `--edit FILE`: the file's name until [`read_edits`] replaces it by its text.
    Edit(String),
    Skip,
}

/// The answer flags in command-line order.
fn ordered_flags(m: &ArgMatches) -> Vec<Flag> {
    let mut all: Vec<(usize, Flag)> = Vec::new();
    for (name, make) in [
        ("question", Flag::Question as fn(String) -> Flag),
        ("select", Flag::Select),
        ("custom", Flag::Custom),
        ("edit", Flag::Edit),
    ] {
        if let (Some(idx), Some(vals)) = (m.indices_of(name), m.get_many::<String>(name)) {
            for (i, v) in idx.zip(vals) {
                all.push((i, make(v.clone())));
            }
        }
    }
    let skip_given = m.value_source("skip") == Some(clap::parser::ValueSource::CommandLine);
    if let Some(idx) = m.indices_of("skip").filter(|_| skip_given) {
        for i in idx {
            all.push((i, Flag::Skip));
        }
    }
    all.sort_by_key(|(i, _)| *i);
    all.into_iter().map(|(_, f)| f).collect()
}

/// Group ordered flags into answer items. `only_question` is the id of the request's
/// single question, used when no `--question` is given.
fn items_from_flags(flags: &[Flag], question_ids: &[String]) -> Result<Vec<AnswerItem>> {
    let mut groups: Vec<(Option<String>, Vec<&Flag>)> = Vec::new();
    for f in flags {
        match f {
            Flag::Question(q) => groups.push((Some(q.clone()), Vec::new())),
            other => {
                if groups.is_empty() {
                    groups.push((None, Vec::new()));
                }
                groups.last_mut().expect("a group exists").1.push(other);
            }
        }
    }
    if groups.iter().any(|(q, _)| q.is_none()) && groups.len() > 1 {
        return Err(Error::Usage(
            "put --select, --custom and --skip after the --question they belong to".into(),
        ));
    }
    let mut items = Vec::new();
    for (qid, flags) in groups {
        let qid = match qid {
            Some(q) => q,
            None => match question_ids {
                [only] => only.clone(),
                _ => {
                    return Err(Error::Usage(format!(
                        "the request has {} questions ({}); name each with --question QID before its flags",
                        question_ids.len(),
                        question_ids.join(", ")
                    )))
                }
            },
        };
        let mut item = AnswerItem {
            id: qid.clone(),
            selected: Vec::new(),
            custom: None,
            edited: None,
        };
        let mut skip = false;
        for f in &flags {
            match f {
                Flag::Select(l) => item.selected.push(l.clone()),
                Flag::Custom(c) => {
                    if item.custom.is_some() {
                        return Err(Error::Usage(format!("question {qid}: give --custom once")));
                    }
                    item.custom = Some(c.clone());
                }
                Flag::Edit(text) => {
                    if item.edited.is_some() {
                        return Err(Error::Usage(format!("question {qid}: give --edit once")));
                    }
                    item.edited = Some(text.clone());
                }
                Flag::Skip => skip = true,
                Flag::Question(_) => unreachable!("questions start groups"),
            }
        }
        if flags.is_empty() {
            return Err(Error::Usage(format!(
                "question {qid}: say --select LABEL, --custom TEXT or --skip"
            )));
        }
        if skip && (!item.is_skip() || item.edited.is_some()) {
            return Err(Error::Usage(format!(
                "question {qid}: --skip cannot be combined with --select, --custom or --edit"
            )));
        }
        items.push(item);
    }
    Ok(items)
}

/// Who acts: the holder of the lease `token`, or (without one) a transient lease in the
/// request's context, registered and released inside the same transaction as `name`
/// (default `$USER`).
pub fn acting(token: Option<&str>, name: Option<&str>) -> app::provide::Acting {
    match token.filter(|t| !t.trim().is_empty()) {
        Some(token) => app::provide::Acting::Lease(token.to_string()),
        None => app::provide::Acting::Transient {
            name: name
                .map(str::to_string)
                .unwrap_or_else(default_provider_name),
        },
    }
}

/// Run it. `m` are the subcommand's matches (for the order of the flags).
pub fn run_with_matches(ctx: &Ctx, a: Args, m: Option<&ArgMatches>) -> Result<()> {
    let flags = match m {
        Some(m) => ordered_flags(m),
        None => fallback_flags(&a),
    };
    if a.answers.is_none() && flags.is_empty() {
        // No answer given: the reviewer's screen, when there is a terminal to ask on.
        if ctx.json || !interactive::available() {
            return Err(Error::Usage(
                "no answer given and no terminal to ask on: use --select LABEL, --custom TEXT, --skip (with --question QID for batches) or --answers FILE|-; run `dshq answer [ID]` on a terminal (without --json) to answer interactively"
                    .into(),
            ));
        }
        let only = a.filters.to_filter()?;
        let context = match only.contexts.as_slice() {
            [] => None,
            [one] => Some(one.clone()),
            many => {
                return Err(Error::Usage(format!(
                    "a reviewer's session holds one context's lease: give one --context, not {}",
                    many.len()
                )))
            }
        };
        let narrowed = only.agent.is_some() || only.intent.is_some() || only.grep.is_some();
        if a.id.is_some() && narrowed {
            return Err(Error::Usage(
                "--agent, --intent and --grep choose what the walk takes; with a request id \
                 there is no walk: drop the id, or the filters"
                    .into(),
            ));
        }
        return interactive::run(
            ctx,
            interactive::Opts {
                id: a.id,
                context,
                only,
                lease: a.lease,
                name: a.name,
                ttl: a.ttl,
                style: ctx.color.for_stderr(),
                follow: a.follow,
                idle_release: a.idle_release,
            },
        );
    }
    let id = a.id.clone().ok_or_else(|| {
        Error::Usage("give the request id: dshq answer ID --select LABEL ...".into())
    })?;
    let mut store = ctx.store()?;
    let answer = match &a.answers {
        Some(path) => {
            let bytes =
                safe_read::read_arg(path, DEFAULT_MAX_REQUEST_BYTES).map_err(|e| match e {
                    safe_read::ReadError::Io(io) => Error::io(path, io),
                    other => Error::Usage(format!("{}: {other}", path.display())),
                })?;
            parse_answer(&bytes)?
        }
        None => {
            let row = store.get(&id)?.ok_or_else(|| Error::NotFound(id.clone()))?;
            let questions = row.request().map(|r| r.questions).unwrap_or_default();
            let qids: Vec<String> = questions.iter().map(|q| q.id.clone()).collect();
            let flags = read_edits(flags)?;
            let mut answers = items_from_flags(&flags, &qids)?;
            for item in &mut answers {
                as_edit_of(item, &questions);
            }
            Answer { answers }
        }
    };
    let who = acting(a.lease.as_deref(), a.name.as_deref());
    match app::provide::answer_for(
        &mut store,
        Some(&ctx.root),
        &id,
        &who,
        &answer,
        a.for_person.as_deref(),
    )? {
        app::provide::Answering::Finished(finished) => publish(ctx, &finished),
        // A vote on a request with a quorum that left it open.
        app::provide::Answering::Voted(v) => {
            crate::output::emit(ctx.json, &v, || crate::output::voted_text(&v))
        }
    }
    Ok(())
}

/// Print a request an answer, cancel or abort finished.
///
/// The commit is the answer: when its outcome file could not be written afterwards (a
/// full disk, a broken `outbox/`), the command still exits 0, because retrying would only
/// meet `REQUEST_FINAL`; the outcome stays pending in the store and the daemon's next pass
/// (or the next command that flushes) writes it. A warning goes to stderr, and `--json`
/// adds `"outboxPending": true` to the printed outcome.
pub fn publish(ctx: &Ctx, finished: &app::Finished) {
    let outcome = &finished.outcome;
    if let Some(e) = &finished.file_pending {
        eprintln!(
            "warning: {} is recorded, but its outcome file could not be written ({}); \
             it stays pending and the daemon writes it",
            crate::text::one_line(outcome.id()),
            crate::text::one_line(e)
        );
    }
    if finished.file_pending.is_some() && ctx.json {
        let mut v = serde_json::to_value(outcome).unwrap_or(serde_json::Value::Null);
        if let Some(o) = v.as_object_mut() {
            o.insert("outboxPending".into(), serde_json::Value::Bool(true));
        }
        crate::output::print_json(&v);
    } else {
        emit(ctx.json, outcome, || outcome_text(outcome));
    }
}

/// Replace each `--edit FILE` by the file's text (`-`: stdin, once), read as `--answers`
/// reads its file (size limit, UTF-8).
fn read_edits(flags: Vec<Flag>) -> Result<Vec<Flag>> {
    let mut stdin_used = false;
    flags
        .into_iter()
        .map(|f| match f {
            Flag::Edit(name) => {
                if name == "-" {
                    if stdin_used {
                        return Err(Error::Usage("only one --edit can read stdin (-)".into()));
                    }
                    stdin_used = true;
                }
                let path = PathBuf::from(&name);
                let bytes =
                    safe_read::read_arg(&path, DEFAULT_MAX_REQUEST_BYTES).map_err(|e| match e {
                        safe_read::ReadError::Io(io) => Error::io(&path, io),
                        other => Error::Usage(format!("{name}: {other}")),
                    })?;
                let text = String::from_utf8(bytes)
                    .map_err(|_| Error::Usage(format!("--edit {name}: the text is not UTF-8")))?;
                Ok(Flag::Edit(text))
            }
            other => Ok(other),
        })
        .collect()
}

/// An item with an edit as the flags meant it: the text as an edit of the question's
/// proposal ([`edit::from_editor`]), and on a plan review with no selection, the
/// approval the edit goes with.
fn as_edit_of(item: &mut AnswerItem, questions: &[crate::protocol::Question]) {
    let Some(text) = item.edited.take() else {
        return;
    };
    let Some(q) = questions.iter().find(|q| q.id == item.id) else {
        item.edited = Some(text);
        return;
    };
    item.edited = Some(edit::from_editor(
        q.detail.as_deref().unwrap_or_default(),
        &text,
    ));
    if let Some(approve) = q.plan_review_approve() {
        if item.selected.is_empty() && item.custom.is_none() {
            item.selected.push(approve.to_string());
        }
    }
}

/// Flags in a fixed order when no matches are available (library callers).
fn fallback_flags(a: &Args) -> Vec<Flag> {
    let mut v: Vec<Flag> = a.question.iter().cloned().map(Flag::Question).collect();
    v.extend(a.select.iter().cloned().map(Flag::Select));
    v.extend(a.custom.iter().cloned().map(Flag::Custom));
    v.extend(a.edit.iter().cloned().map(Flag::Edit));
    v.extend(a.skip.iter().map(|_| Flag::Skip));
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn flags_without_question_answer_the_only_question() {
        let items = items_from_flags(&[Flag::Select("A".into())], &ids(&["q1"])).unwrap();
        assert_eq!(
            items,
            vec![AnswerItem {
                id: "q1".into(),
                selected: vec!["A".into()],
                custom: None,
                edited: None,
            }]
        );
    }

    #[test]
    fn flags_group_by_question_in_order() {
        let flags = [
            Flag::Question("a".into()),
            Flag::Select("X".into()),
            Flag::Custom("more".into()),
            Flag::Question("b".into()),
            Flag::Skip,
        ];
        let items = items_from_flags(&flags, &ids(&["a", "b"])).unwrap();
        assert_eq!(items[0].selected, vec!["X".to_string()]);
        assert_eq!(items[0].custom.as_deref(), Some("more"));
        assert!(items[1].is_skip());
    }

    #[test]
    fn batch_without_question_is_a_usage_error() {
        let e = items_from_flags(&[Flag::Skip], &ids(&["a", "b"])).unwrap_err();
        assert!(matches!(e, Error::Usage(_)));
    }

    #[test]
    fn skip_with_select_is_a_usage_error() {
        let e =
            items_from_flags(&[Flag::Skip, Flag::Select("A".into())], &ids(&["a"])).unwrap_err();
        assert!(matches!(e, Error::Usage(_)));
    }
}
