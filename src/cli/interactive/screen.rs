//! The review screen for one request: each question with its header, text, detail and
//! options; single select, multi-select, "Other" free text, skip; the plan-review screen;
//! a summary to confirm or revise a batch; and the request menu (back, cancel the request,
//! leave it for later, quit).
//!
//! The screen talks to the terminal only through [`Prompter`], so its logic (which answer
//! each path produces) is unit-tested with a scripted prompter, and the pseudo-terminal
//! tests only have to show that the real prompts drive it. Every answer item it builds has
//! a valid shape by construction (single-select "Other" leaves `selected` empty because
//! `custom` overrides; multi-select "Other" supplements the labels; a skip is
//! `selected: []` without `custom`; blank text is never sent as `custom`), and the whole
//! answer is checked with [`check_answer`] before it is handed back, so the screen cannot
//! produce a `BAD_ANSWER`.
//!
//! A plan review that allows an edit offers "Edit the plan in $EDITOR, then approve it
//! as edited" ([`crate::protocol::edit`]); the send confirmation then prints the unified
//! diff of the edit (each line made safe for the terminal) before "Send …? (y/N)".
//!
//! Every send is an explicit choice. A held Enter key (auto-repeat, a stuck key, keys typed
//! ahead) must never approve a plan, skip a question or answer a queue: so the last step
//! of every request is a yes/no confirmation whose Enter means **No** ("Send: approved
//! (Ship it)? y/N"; for a batch, after "Submit these answers" in the summary), and the
//! plan pager never closes on Enter or Space (only `q`/Esc). A No goes back to the
//! question (a batch: to the summary), so a held Enter cycles harmlessly between a
//! prompt and its confirmation and nothing is sent.

use crate::output::ellipsize;
use crate::protocol::answer::{check_answer, decision};
use crate::protocol::{edit, review, Answer, AnswerItem, Decision, Question};

use super::markdown;
use super::style::{one_line, Style};
use super::wrap::{self, Paint, Word};

/// Why the screen stopped before the reviewer chose an ending.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stop {
    /// Ctrl-C.
    Interrupted,
    /// The terminal failed.
    Terminal(String),
    /// The session's idle watch ended the step: the lease could not be taken back, or
    /// the request on screen ended while it was released (see
    /// [`super::idle::Presence::take_ended`]).
    Ended,
}

/// What a prompt returned: a value, or Esc.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply<T> {
    /// The reviewer chose.
    Value(T),
    /// The reviewer pressed Esc.
    Esc,
}

/// The terminal as the screen uses it.
pub trait Prompter {
    /// How to paint text.
    fn style(&self) -> Style;
    /// Columns and rows.
    fn size(&self) -> (usize, usize);
    /// Print lines.
    fn say(&mut self, text: &str);
    /// Choose one item; returns its index.
    fn select(
        &mut self,
        message: &str,
        items: &[String],
        help: &str,
        start: usize,
    ) -> Result<Reply<usize>, Stop>;
    /// Toggle items, then confirm; returns the chosen indices in item order.
    fn multi(
        &mut self,
        message: &str,
        items: &[String],
        help: &str,
        defaults: &[usize],
    ) -> Result<Reply<Vec<usize>>, Stop>;
    /// A line of text.
    fn text(&mut self, message: &str, initial: &str, help: &str) -> Result<Reply<String>, Stop>;
    /// Show long text a screen at a time.
    fn pager(&mut self, title: &str, lines: &[String]) -> Result<(), Stop>;
    /// A yes/no question whose default (Enter alone) is **no**.
    fn confirm(&mut self, message: &str, help: &str) -> Result<Reply<bool>, Stop>;
    /// Choose one item with single keys: Enter or an item's number (1–9) picks it, and
    /// each char of `actions` returns at once. By default, [`Prompter::select`].
    fn keyed(
        &mut self,
        message: &str,
        items: &[String],
        help: &str,
        start: usize,
        actions: &str,
    ) -> Result<Keyed, Stop> {
        let _ = actions;
        Ok(match self.select(message, items, help, start)? {
            Reply::Value(k) => Keyed::Pick(k),
            Reply::Esc => Keyed::Esc,
        })
    }
    /// Tick items with single keys: as [`Prompter::multi`], and each char of `actions`
    /// returns at once with the items ticked so far. By default, [`Prompter::multi`].
    fn multi_keyed(
        &mut self,
        message: &str,
        items: &[String],
        help: &str,
        defaults: &[usize],
        actions: &str,
    ) -> Result<MultiKeyed, Stop> {
        let _ = actions;
        Ok(match self.multi(message, items, help, defaults)? {
            Reply::Value(v) => MultiKeyed::Ticked(v),
            Reply::Esc => MultiKeyed::Esc,
        })
    }
    /// Long text in the reviewer's editor, starting from `initial`; `None` when left
    /// blank (or no editor can run).
    fn edit(&mut self, initial: &str) -> Result<Option<String>, Stop> {
        let _ = initial;
        Ok(None)
    }
    /// Show the asking agent's context (the request's whole meta, the agent, its last
    /// questions). By default nothing.
    fn context(&mut self) -> Result<(), Stop> {
        Ok(())
    }
}

/// What a key did in [`Prompter::keyed`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keyed {
    /// An item was chosen.
    Pick(usize),
    /// Esc.
    Esc,
    /// One of the offered action keys.
    Action(char),
}

/// What a key did in [`Prompter::multi_keyed`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MultiKeyed {
    /// Enter: the ticked items, in item order.
    Ticked(Vec<usize>),
    /// Esc.
    Esc,
    /// One of the offered action keys, with the items ticked so far.
    Action(char, Vec<usize>),
}

/// The action keys of a question's list: `e` the editor (Other, or decline feedback),
/// `s` skip, `l` leave the request for later, `i` the asker's context, `q` quit.
const ACTIONS: &str = "esliq";

/// What an action key means on a question's list; `None` for `e` and `i`, which the
/// caller handles.
fn action_step(q: &Question, c: char) -> Option<Step> {
    match c {
        's' => Some(Step::Answered(skip_item(q))),
        'l' => Some(Step::End(RequestEnd::Later)),
        'q' => Some(Step::End(RequestEnd::Quit)),
        _ => None,
    }
}

/// How the reviewer ended a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestEnd {
    /// A complete answer that meets the rules.
    Answer(Answer),
    /// Cancel the request (`ASK_CANCELLED`) with an optional reason.
    Cancel(Option<String>),
    /// Leave it for later (the walk moves on).
    Later,
    /// End the session.
    Quit,
}

/// One question's result.
enum Step {
    Answered(AnswerItem),
    Menu,
    /// A key ended the request (later, quit).
    End(RequestEnd),
}

/// The request menu.
enum MenuChoice {
    Resume,
    Previous,
    Skip,
    Cancel(Option<String>),
    Later,
    Quit,
}

const OTHER: &str = "Other: type your own answer…";
const EDIT_PLAN: &str = "Edit the plan in $EDITOR, then approve it as edited…";
const EDIT_PROPOSAL: &str = "Edit the proposal in $EDITOR, then approve it as edited…";
const SKIP: &str = "Skip this question";
const MORE: &str = "More: back, cancel the request, leave it for later, quit…";

fn skip_item(q: &Question) -> AnswerItem {
    AnswerItem {
        id: q.id.clone(),
        selected: Vec::new(),
        custom: None,
        edited: None,
    }
}

/// Non-blank text, trimmed of surrounding line breaks only (the reviewer's spacing stays).
fn non_blank(s: &str) -> Option<String> {
    if s.trim().is_empty() {
        None
    } else {
        Some(s.trim_matches(['\r', '\n']).to_string())
    }
}

/// Ask for free text and make it a custom-only answer (`selected: []`); `None` when the
/// reviewer leaves it empty or presses Esc.
fn custom_only(
    p: &mut dyn Prompter,
    q: &Question,
    prev: Option<&AnswerItem>,
    title: &str,
    help: &str,
) -> Result<Option<AnswerItem>, Stop> {
    let initial = prev.and_then(|p| p.custom.as_deref()).unwrap_or("");
    Ok(match p.text(title, initial, help)? {
        Reply::Value(t) => non_blank(&t).map(|custom| AnswerItem {
            id: q.id.clone(),
            selected: Vec::new(),
            custom: Some(custom),
            edited: None,
        }),
        Reply::Esc => None,
    })
}

fn option_line(label: &str, description: Option<&str>, suffix: &str) -> String {
    let label = one_line(label);
    match description {
        Some(d) if !d.trim().is_empty() => format!("{label}{suffix} — {}", one_line(d)),
        _ => format!("{label}{suffix}"),
    }
}

/// Review one request's questions; returns how the reviewer ended it.
pub fn review(p: &mut dyn Prompter, questions: &[Question]) -> Result<RequestEnd, Stop> {
    let n = questions.len();
    let mut items: Vec<Option<AnswerItem>> = vec![None; n];
    let mut i = 0usize;
    let mut revising = false;
    // Back from the menu to the same question: do not page a long plan again.
    let mut resumed = false;
    loop {
        if i >= n {
            let answer = Answer {
                answers: items.iter().flatten().cloned().collect(),
            };
            if n > 1 {
                match summary(p, questions, &items)? {
                    Summary::Submit => {}
                    Summary::Revise(k) => {
                        i = k;
                        revising = true;
                        continue;
                    }
                    Summary::End(end) => return Ok(end),
                }
            }
            if !confirm_send(p, questions, &items)? {
                if n == 1 {
                    // Back to the question, without paging a long plan again.
                    i = 0;
                    revising = true;
                    resumed = true;
                }
                // A batch goes back to its summary.
                continue;
            }
            match check_answer(questions, &answer) {
                Ok(_) => return Ok(RequestEnd::Answer(answer)),
                Err(e) => {
                    // Unreachable by construction; never submit it, ask again instead.
                    let style = p.style();
                    p.say(&style.warn(&format!("cannot submit: {}", e.message)));
                    i = 0;
                    revising = false;
                    continue;
                }
            }
        }
        let q = &questions[i];
        let step = ask_question(p, q, i, n, items[i].as_ref(), resumed)?;
        resumed = false;
        match step {
            Step::Answered(item) => {
                items[i] = Some(item);
                i = if revising { n } else { i + 1 };
            }
            Step::End(end) => return Ok(end),
            Step::Menu => match menu(p, q, i > 0)? {
                MenuChoice::Resume => resumed = true,
                MenuChoice::Previous => {
                    i -= 1;
                    revising = false;
                }
                MenuChoice::Skip => {
                    items[i] = Some(skip_item(q));
                    i = if revising { n } else { i + 1 };
                }
                MenuChoice::Cancel(reason) => return Ok(RequestEnd::Cancel(reason)),
                MenuChoice::Later => return Ok(RequestEnd::Later),
                MenuChoice::Quit => return Ok(RequestEnd::Quit),
            },
        }
    }
}

fn show_question(p: &mut dyn Prompter, q: &Question, i: usize, n: usize, plan: bool) {
    let style = p.style();
    let (width, _) = p.size();
    let mut kind = vec![format!("id {}", q.id)];
    if n > 1 {
        kind.insert(0, format!("question {} of {n}", i + 1));
    }
    if q.is_multi() {
        kind.push("multi-select".into());
    }
    if plan {
        kind.push("plan review".into());
    }
    // Wrapped at words to the width: the header, the question, then what kind it is.
    let mut words = Vec::new();
    if let Some(h) = q.header.as_deref().filter(|h| !h.trim().is_empty()) {
        words.extend(wrap::words(&format!("[{}]", one_line(h)), Paint::Heading));
    }
    words.extend(wrap::words(&one_line(&q.question), Paint::Bold));
    words.push(Word::new(&format!(" ({})", kind.join(" · ")), Paint::Dim));
    let line_width = width.saturating_sub(1).max(20);
    let mut s = String::from("\n");
    s.push_str(&wrap::fill(&words, ("", 0), ("  ", 2), line_width, &style).join("\n"));
    if !plan {
        if let Some(d) = q.detail.as_deref().filter(|d| !d.trim().is_empty()) {
            for line in markdown::render(d, width.saturating_sub(4), &style) {
                s.push_str(&format!("\n  {line}"));
            }
        }
    }
    p.say(&s);
}

fn ask_question(
    p: &mut dyn Prompter,
    q: &Question,
    i: usize,
    n: usize,
    prev: Option<&AnswerItem>,
    resumed: bool,
) -> Result<Step, Stop> {
    if review::choices(q).is_some() {
        show_question(p, q, i, n, true);
        return plan_review(p, q, prev, !resumed);
    }
    show_question(p, q, i, n, false);
    if q.options().is_empty() && q.allows_edit() {
        editable_text(p, q, prev)
    } else if q.options().is_empty() {
        free_text(p, q, prev)
    } else if q.is_multi() {
        multi_select(p, q, prev)
    } else {
        single_select(p, q, prev)
    }
}

fn single_select(
    p: &mut dyn Prompter,
    q: &Question,
    prev: Option<&AnswerItem>,
) -> Result<Step, Stop> {
    let opts = q.options();
    let mut items: Vec<String> = opts
        .iter()
        .map(|o| option_line(&o.label, o.description.as_deref(), ""))
        .collect();
    let (other, skip, more) = (items.len(), items.len() + 1, items.len() + 2);
    items.extend([OTHER.to_string(), SKIP.to_string(), MORE.to_string()]);
    let start = match prev {
        Some(p) if p.custom.is_some() => other,
        Some(p) => p
            .selected
            .first()
            .and_then(|l| opts.iter().position(|o| &o.label == l))
            .unwrap_or(skip),
        None => 0,
    };
    let help = "1-9/Enter: choose · e: Other in $EDITOR · s: skip · l: later · i: context · q: quit · Esc: more";
    loop {
        let k = match p.keyed("Your answer", &items, help, start, ACTIONS)? {
            Keyed::Esc => return Ok(Step::Menu),
            Keyed::Pick(k) => k,
            Keyed::Action('e') => {
                let initial = prev.and_then(|p| p.custom.as_deref()).unwrap_or("");
                if let Some(custom) = p.edit(initial)? {
                    return Ok(Step::Answered(AnswerItem {
                        id: q.id.clone(),
                        selected: Vec::new(),
                        custom: Some(custom),
                        edited: None,
                    }));
                }
                continue;
            }
            Keyed::Action(c) => match action_step(q, c) {
                Some(step) => return Ok(step),
                None => {
                    p.context()?;
                    continue;
                }
            },
        };
        if k < opts.len() {
            return Ok(Step::Answered(AnswerItem {
                id: q.id.clone(),
                selected: vec![opts[k].label.clone()],
                custom: None,
                edited: None,
            }));
        }
        if k == other {
            // Single-select: custom overrides, so nothing is selected.
            if let Some(item) = custom_only(
                p,
                q,
                prev,
                "Your answer",
                "replaces the options · empty or Esc: back to the list",
            )? {
                return Ok(Step::Answered(item));
            }
            continue;
        }
        if k == skip {
            return Ok(Step::Answered(skip_item(q)));
        }
        debug_assert_eq!(k, more);
        return Ok(Step::Menu);
    }
}

fn multi_select(
    p: &mut dyn Prompter,
    q: &Question,
    prev: Option<&AnswerItem>,
) -> Result<Step, Stop> {
    let opts = q.options();
    let mut items: Vec<String> = opts
        .iter()
        .map(|o| option_line(&o.label, o.description.as_deref(), ""))
        .collect();
    let other = items.len();
    items.push("Other: add your own text…".to_string());
    let mut defaults: Vec<usize> = prev
        .map(|p| {
            opts.iter()
                .enumerate()
                .filter(|(_, o)| p.selected.contains(&o.label))
                .map(|(k, _)| k)
                .collect()
        })
        .unwrap_or_default();
    if prev.is_some_and(|p| p.custom.is_some()) {
        defaults.push(other);
    }
    let help =
        "1-9/Space: tick · Enter: done · e: editor · s: skip · l: later · i: context · q: quit · Esc: more";
    loop {
        let chosen = match p.multi_keyed("Choose any", &items, help, &defaults, ACTIONS)? {
            MultiKeyed::Esc => return Ok(Step::Menu),
            MultiKeyed::Ticked(c) => c,
            MultiKeyed::Action('e', ticked) => {
                // The ticked options, with the editor's text added to them.
                defaults = ticked;
                let initial = prev.and_then(|p| p.custom.as_deref()).unwrap_or("");
                if let Some(custom) = p.edit(initial)? {
                    return Ok(Step::Answered(AnswerItem {
                        id: q.id.clone(),
                        selected: opts
                            .iter()
                            .enumerate()
                            .filter(|(k, _)| defaults.contains(k))
                            .map(|(_, o)| o.label.clone())
                            .collect(),
                        custom: Some(custom),
                        edited: None,
                    }));
                }
                continue;
            }
            MultiKeyed::Action(c, ticked) => match action_step(q, c) {
                Some(step) => return Ok(step),
                None => {
                    defaults = ticked;
                    p.context()?;
                    continue;
                }
            },
        };
        let selected: Vec<String> = opts
            .iter()
            .enumerate()
            .filter(|(k, _)| chosen.contains(k))
            .map(|(_, o)| o.label.clone())
            .collect();
        let mut custom = None;
        if chosen.contains(&other) {
            let initial = prev.and_then(|p| p.custom.as_deref()).unwrap_or("");
            match p.text(
                "Your text",
                initial,
                "added to the chosen options · empty: none · Esc: back to the list",
            )? {
                Reply::Value(t) => custom = non_blank(&t),
                Reply::Esc => {
                    defaults = chosen;
                    continue;
                }
            }
        }
        // Multi-select: custom supplements the labels; both may be present.
        return Ok(Step::Answered(AnswerItem {
            id: q.id.clone(),
            selected,
            custom,
            edited: None,
        }));
    }
}

fn free_text(p: &mut dyn Prompter, q: &Question, prev: Option<&AnswerItem>) -> Result<Step, Stop> {
    let initial = prev.and_then(|p| p.custom.as_deref()).unwrap_or("");
    match p.text(
        "Your answer",
        initial,
        "Enter on an empty line skips · Esc: more (back, cancel, quit)",
    )? {
        Reply::Esc => Ok(Step::Menu),
        Reply::Value(t) => Ok(Step::Answered(AnswerItem {
            id: q.id.clone(),
            selected: Vec::new(),
            custom: non_blank(&t),
            edited: None,
        })),
    }
}

/// A free-text question the asker made `editable`: answer in words, or edit the proposal
/// (its detail, shown above) and approve it as edited.
fn editable_text(
    p: &mut dyn Prompter,
    q: &Question,
    prev: Option<&AnswerItem>,
) -> Result<Step, Stop> {
    let items = [
        "Answer in words…".to_string(),
        EDIT_PROPOSAL.to_string(),
        MORE.to_string(),
    ];
    let start = usize::from(prev.is_some_and(|i| i.edited.is_some()));
    let help = "1-9/Enter: choose · s: skip · l: later · i: context · q: quit · Esc: more";
    loop {
        match p.keyed("Your answer", &items, help, start, "sliq")? {
            Keyed::Esc | Keyed::Pick(2) => return Ok(Step::Menu),
            Keyed::Pick(0) => return free_text(p, q, prev),
            Keyed::Pick(_) => {
                if let Some(item) = edited_proposal(p, q, prev)? {
                    return Ok(Step::Answered(item));
                }
            }
            Keyed::Action(c) => match action_step(q, c) {
                Some(step) => return Ok(step),
                None => p.context()?,
            },
        }
    }
}

/// Print the plan, or page it when it does not fit the screen (`pager`: the pager may be
/// opened; otherwise a long plan is only mentioned).
fn show_plan(p: &mut dyn Prompter, q: &Question, pager: bool) -> Result<(), Stop> {
    let style = p.style();
    let (width, rows) = p.size();
    let plan = q.detail.as_deref().unwrap_or("");
    if plan.trim().is_empty() {
        p.say(&style.dim("  (the plan is empty)"));
        return Ok(());
    }
    let lines = markdown::render(plan, width.saturating_sub(4), &style);
    // Leave room for the question line, the decision list and its help line.
    if lines.len() + 12 > rows {
        if pager {
            p.pager(&format!("Plan: {}", one_line(&q.question)), &lines)?;
        }
        p.say(&style.dim(&format!(
            "  (plan: {} lines, read in the pager; choose \"Read the plan again\" to reopen it)",
            lines.len()
        )));
    } else {
        let bar = style.dim("│");
        let body: Vec<String> = lines.iter().map(|l| format!("  {bar} {l}")).collect();
        p.say(&body.join("\n"));
    }
    Ok(())
}

/// A plan review's decision list: the review's choices, then "Read the plan again", "Edit
/// the plan" (unless the asker made the plan `editable: false`) and the menu, with where
/// each of those three stands.
struct PlanMenu {
    items: Vec<String>,
    again: usize,
    edit_then_approve: Option<usize>,
    more: usize,
}

impl PlanMenu {
    fn of(q: &Question, plan: &review::Choices) -> PlanMenu {
        let mut items: Vec<String> = plan
            .choices
            .iter()
            .map(|c| match c {
                review::Choice::Option {
                    option, approves, ..
                } => option_line(
                    &option.label,
                    option.description.as_deref(),
                    if *approves {
                        " (approves)"
                    } else {
                        " (declines)"
                    },
                ),
                review::Choice::DeclineWithFeedback => review::DECLINE_WITH_FEEDBACK.to_string(),
            })
            .collect();
        let again = items.len();
        items.push("Read the plan again".to_string());
        let edit_then_approve = q.allows_edit().then(|| {
            items.push(EDIT_PLAN.to_string());
            items.len() - 1
        });
        items.push(MORE.to_string());
        let more = items.len() - 1;
        PlanMenu {
            items,
            again,
            edit_then_approve,
            more,
        }
    }
}

/// Where the decision list starts: on the earlier answer's choice (the feedback, for a
/// declined one), else on the review's default.
fn plan_start(plan: &review::Choices, prev: Option<&AnswerItem>) -> usize {
    match prev {
        Some(item) if item.custom.is_some() => plan.default,
        Some(item) => item
            .selected
            .first()
            .and_then(|l| {
                plan.choices.iter().position(
                    |c| matches!(c, review::Choice::Option { option, .. } if &option.label == l),
                )
            })
            .unwrap_or(plan.default),
        None => plan.default,
    }
}

fn plan_review(
    p: &mut dyn Prompter,
    q: &Question,
    prev: Option<&AnswerItem>,
    pager: bool,
) -> Result<Step, Stop> {
    show_plan(p, q, pager)?;
    // The same choices, order and default as the page (protocol::review).
    let plan = review::choices(q).unwrap_or(review::Choices {
        choices: vec![review::Choice::DeclineWithFeedback],
        default: 0,
    });
    let menu = PlanMenu::of(q, &plan);
    let (items, again, edit_then_approve, more) =
        (&menu.items, menu.again, menu.edit_then_approve, menu.more);
    let start = plan_start(&plan, prev);
    let help =
        "1-9/Enter: choose · e: feedback in $EDITOR · l: later · i: context · q: quit · Esc: more";
    loop {
        let k = match p.keyed("Your decision", items, help, start, ACTIONS)? {
            Keyed::Esc => return Ok(Step::Menu),
            Keyed::Pick(k) => k,
            Keyed::Action('e') => {
                // Declined: nothing selected, the feedback in custom.
                let initial = prev.and_then(|p| p.custom.as_deref()).unwrap_or("");
                if let Some(custom) = p.edit(initial)? {
                    return Ok(Step::Answered(AnswerItem {
                        id: q.id.clone(),
                        selected: Vec::new(),
                        custom: Some(custom),
                        edited: None,
                    }));
                }
                continue;
            }
            // A plan review's skip records a decline: only through the menu, which says so.
            Keyed::Action('s') => continue,
            Keyed::Action(c) => match action_step(q, c) {
                Some(step) => return Ok(step),
                None => {
                    p.context()?;
                    continue;
                }
            },
        };
        if let Some(review::Choice::Option { option, .. }) = plan.choices.get(k) {
            return Ok(Step::Answered(AnswerItem {
                id: q.id.clone(),
                selected: vec![option.label.clone()],
                custom: None,
                edited: None,
            }));
        }
        if matches!(
            plan.choices.get(k),
            Some(review::Choice::DeclineWithFeedback)
        ) {
            // Declined: nothing selected, the feedback in custom.
            if let Some(item) = custom_only(
                p,
                q,
                prev,
                "Feedback for the author",
                "what should change · empty or Esc: back to the decision",
            )? {
                return Ok(Step::Answered(item));
            }
            continue;
        }
        if k == again {
            show_question(p, q, 0, 1, true);
            show_plan(p, q, true)?;
            continue;
        }
        if Some(k) == edit_then_approve {
            if let Some(item) = edited_proposal(p, q, prev)? {
                return Ok(Step::Answered(item));
            }
            continue;
        }
        debug_assert_eq!(k, more);
        return Ok(Step::Menu);
    }
}

/// Edit-then-approve: the proposal (or the edit given before) in the reviewer's editor;
/// an approval carrying the edited text (a plan review's approve label selected), or
/// `None` when it came back unchanged or blank (nothing is edited, nothing approved).
fn edited_proposal(
    p: &mut dyn Prompter,
    q: &Question,
    prev: Option<&AnswerItem>,
) -> Result<Option<AnswerItem>, Stop> {
    let proposed = q.detail.as_deref().unwrap_or_default();
    let initial = prev.and_then(|i| i.edited.as_deref()).unwrap_or(proposed);
    let style = p.style();
    let Some(text) = p.edit(initial)? else {
        p.say(&style.dim("  (the editor came back empty: nothing edited)"));
        return Ok(None);
    };
    let Some(edited) = edit::as_edit(proposed, &text).filter(|t| !t.trim().is_empty()) else {
        p.say(&style.dim("  (it came back unchanged: nothing edited)"));
        return Ok(None);
    };
    Ok(Some(AnswerItem {
        id: q.id.clone(),
        selected: q
            .plan_review_approve()
            .map(|a| vec![a.to_string()])
            .unwrap_or_default(),
        custom: None,
        edited: Some(edited),
    }))
}

/// The diff of an edit as the confirmation shows it: each line made safe for the
/// terminal (asker and reviewer text), added lines in the accent, removed ones warned.
fn diff_lines(q: &Question, approved: &str, style: &Style) -> Vec<String> {
    edit::edited(q, approved)
        .diff
        .lines()
        .map(|l| {
            let safe = one_line(l);
            let line = if l.starts_with("+++") || l.starts_with("---") || l.starts_with("@@") {
                style.dim(&safe)
            } else if l.starts_with('+') {
                style.accent(&safe)
            } else if l.starts_with('-') {
                style.warn(&safe)
            } else {
                safe.to_string()
            };
            format!("  {line}")
        })
        .collect()
}

fn menu(p: &mut dyn Prompter, q: &Question, has_previous: bool) -> Result<MenuChoice, Stop> {
    let mut items = vec![("Back to this question".to_string(), MenuChoice::Resume)];
    if has_previous {
        items.push(("Previous question".into(), MenuChoice::Previous));
    }
    let skip = if q.plan_review_approve().is_some() {
        "Skip this question (records a decline without feedback)"
    } else {
        SKIP
    };
    items.push((skip.into(), MenuChoice::Skip));
    items.push((
        "Cancel this request (the asker gets ASK_CANCELLED)…".into(),
        MenuChoice::Cancel(None),
    ));
    items.push(("Leave this request for later".into(), MenuChoice::Later));
    items.push(("Quit".into(), MenuChoice::Quit));
    let labels: Vec<String> = items.iter().map(|(l, _)| l.clone()).collect();
    let k = match p.select("What now?", &labels, "Esc: back to the question", 0)? {
        Reply::Esc => return Ok(MenuChoice::Resume),
        Reply::Value(k) => k,
    };
    let choice = items.swap_remove(k).1;
    if let MenuChoice::Cancel(_) = choice {
        return cancel_reason(p);
    }
    Ok(choice)
}

fn cancel_reason(p: &mut dyn Prompter) -> Result<MenuChoice, Stop> {
    match p.text(
        "Reason for cancelling (optional)",
        "",
        "Enter cancels the request · Esc: back, nothing is cancelled",
    )? {
        Reply::Esc => Ok(MenuChoice::Resume),
        Reply::Value(t) => Ok(MenuChoice::Cancel(non_blank(&t))),
    }
}

/// What one answer will send, whole: the decision or the labels picked, then every line
/// of the reviewer's text (feedback, Other) as it will be sent, wrapped at words.
fn sending_lines(q: &Question, item: &AnswerItem, style: &Style, width: usize) -> Vec<String> {
    let short = describe(q, item);
    if short.chars().count() <= width
        && !item.custom.as_deref().is_some_and(|c| c.contains('\n'))
        && item.edited.is_none()
    {
        return vec![style.accent(&short)];
    }
    let labels: Vec<String> = item.selected.iter().map(|l| one_line(l)).collect();
    let head = match decision(q, item) {
        Some(Decision::Approved) => format!("approved ({})", labels.join(", ")),
        Some(Decision::Declined) if labels.is_empty() && item.custom.is_some() => {
            "declined, with this feedback:".to_string()
        }
        Some(Decision::Declined) if labels.is_empty() => "declined (skipped)".to_string(),
        Some(Decision::Declined) => format!("declined: {}", labels.join(", ")),
        None if labels.is_empty() && item.custom.is_none() && item.edited.is_some() => {
            "the proposal, approved as edited".to_string()
        }
        None if labels.is_empty() && item.custom.is_none() => "(skipped)".to_string(),
        None if item.custom.is_some() && labels.is_empty() => "this text:".to_string(),
        None if item.custom.is_some() => format!("{}, and this text:", labels.join(", ")),
        None => labels.join(", "),
    };
    let head = if item.edited.is_some() {
        format!("{head}; the changes to the proposal:")
    } else {
        head
    };
    let mut lines = wrap::text(&head, width, 2, Paint::Accent, style);
    if let Some(e) = &item.edited {
        lines.extend(diff_lines(q, e, style));
    }
    if let Some(c) = &item.custom {
        let bar = style.dim("│");
        for l in super::style::multi_line(c).lines() {
            let ws = wrap::words(l, Paint::Plain);
            let first = format!("  {bar} ");
            lines.extend(wrap::fill(&ws, (&first, 4), (&first, 4), width, style));
        }
    }
    lines
}

/// The last step before anything is sent: "Send …? (y/N)", Enter meaning no. When the
/// answer does not fit that one line (long or several-line feedback), it is printed
/// whole above the question first, so the reviewer sees every word that will be sent.
fn confirm_send(
    p: &mut dyn Prompter,
    questions: &[Question],
    items: &[Option<AnswerItem>],
) -> Result<bool, Stop> {
    let message = match (questions, items) {
        ([q], [Some(item)]) => {
            let short = describe(q, item);
            let fits = short.chars().count() <= 60
                && item.edited.is_none()
                && !item
                    .custom
                    .as_deref()
                    .is_some_and(|c| c.trim().contains('\n'));
            if fits {
                format!("Send: {short}?")
            } else {
                let style = p.style();
                let width = p.size().0.saturating_sub(1).max(20);
                let mut s = vec![String::new(), style.heading("This will be sent:")];
                s.extend(sending_lines(q, item, &style, width));
                p.say(&s.join("\n"));
                "Send the answer above?".to_string()
            }
        }
        _ => format!("Send these {} answers?", questions.len()),
    };
    let help = if questions.len() == 1 {
        "y then Enter: send · Enter or n: back to the question"
    } else {
        "y then Enter: send · Enter or n: back to the summary"
    };
    Ok(matches!(p.confirm(&message, help)?, Reply::Value(true)))
}

enum Summary {
    Submit,
    Revise(usize),
    End(RequestEnd),
}

/// How one answer reads in the summary.
pub fn describe(q: &Question, item: &AnswerItem) -> String {
    let mut parts: Vec<String> = item.selected.iter().map(|l| one_line(l)).collect();
    if let Some(c) = &item.custom {
        parts.push(format!("“{}”", one_line(c)));
    }
    let what = match (parts.is_empty(), item.edited.is_some()) {
        (true, true) => "the proposal".to_string(),
        (true, false) => "(skipped)".to_string(),
        (false, _) => parts.join(", "),
    };
    let what = if item.edited.is_some() {
        format!("{what}, as edited")
    } else {
        what
    };
    match decision(q, item) {
        Some(Decision::Approved) => format!("approved ({what})"),
        Some(Decision::Declined) => format!("declined: {what}"),
        None => what,
    }
}

fn summary(
    p: &mut dyn Prompter,
    questions: &[Question],
    items: &[Option<AnswerItem>],
) -> Result<Summary, Stop> {
    let style = p.style();
    // Every answer whole (what the send will carry), each under its question.
    let width = p.size().0.saturating_sub(1).max(20);
    let mut s = format!("\n{}", style.heading("Summary"));
    for (k, (q, item)) in questions.iter().zip(items).enumerate() {
        s.push_str(&format!(
            "\n  {}. {}",
            k + 1,
            ellipsize(&one_line(&q.question), width.saturating_sub(6))
        ));
        if let Some(item) = item {
            for l in sending_lines(q, item, &style, width.saturating_sub(5)) {
                s.push_str(&format!("\n     {l}"));
            }
        }
    }
    p.say(&s);
    let mut labels = vec!["Submit these answers".to_string()];
    labels.extend(questions.iter().enumerate().map(|(k, q)| {
        format!(
            "Revise {}: {}",
            k + 1,
            ellipsize(&one_line(&q.question), 50)
        )
    }));
    let n = questions.len();
    labels.push("Cancel this request (the asker gets ASK_CANCELLED)…".into());
    labels.push("Leave this request for later".into());
    labels.push("Quit".into());
    loop {
        let k = match p.select(
            "Submit?",
            &labels,
            "Enter choose · Esc: revise the last question",
            0,
        )? {
            Reply::Esc => return Ok(Summary::Revise(n - 1)),
            Reply::Value(k) => k,
        };
        return Ok(match k {
            0 => Summary::Submit,
            k if k <= n => Summary::Revise(k - 1),
            k if k == n + 1 => match cancel_reason(p)? {
                MenuChoice::Cancel(r) => Summary::End(RequestEnd::Cancel(r)),
                _ => continue,
            },
            k if k == n + 2 => Summary::End(RequestEnd::Later),
            _ => Summary::End(RequestEnd::Quit),
        });
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use super::*;
    use crate::protocol::{Intent, QuestionOption};

    /// A scripted reviewer: each prompt takes the next reply and checks its kind.
    #[derive(Default)]
    struct Script {
        replies: VecDeque<Scripted>,
        said: Vec<String>,
        paged: usize,
        /// Every list offered: its items and where the cursor started.
        lists: Vec<(Vec<String>, usize)>,
    }

    #[derive(Debug)]
    enum Scripted {
        Select(Reply<usize>),
        Multi(Reply<Vec<usize>>),
        Text(Reply<String>),
        Confirm(Reply<bool>),
    }

    impl Prompter for Script {
        fn style(&self) -> Style {
            Style::PLAIN
        }
        fn size(&self) -> (usize, usize) {
            (80, 24)
        }
        fn say(&mut self, text: &str) {
            self.said.push(text.to_string());
        }
        fn select(
            &mut self,
            m: &str,
            items: &[String],
            _: &str,
            start: usize,
        ) -> Result<Reply<usize>, Stop> {
            self.lists.push((items.to_vec(), start));
            match self.replies.pop_front() {
                Some(Scripted::Select(r)) => {
                    if let Reply::Value(k) = r {
                        assert!(k < items.len(), "{m}: {k} of {items:?}");
                    }
                    Ok(r)
                }
                other => panic!("select {m:?} {items:?}: script has {other:?}"),
            }
        }
        fn multi(
            &mut self,
            m: &str,
            items: &[String],
            _: &str,
            _: &[usize],
        ) -> Result<Reply<Vec<usize>>, Stop> {
            match self.replies.pop_front() {
                Some(Scripted::Multi(r)) => Ok(r),
                other => panic!("multi {m:?} {items:?}: script has {other:?}"),
            }
        }
        fn text(&mut self, m: &str, _: &str, _: &str) -> Result<Reply<String>, Stop> {
            match self.replies.pop_front() {
                Some(Scripted::Text(r)) => Ok(r),
                None => Err(Stop::Interrupted),
                other => panic!("text {m:?}: script has {other:?}"),
            }
        }
        fn pager(&mut self, _: &str, _: &[String]) -> Result<(), Stop> {
            self.paged += 1;
            Ok(())
        }
        fn confirm(&mut self, m: &str, _: &str) -> Result<Reply<bool>, Stop> {
            self.said.push(m.to_string());
            match self.replies.pop_front() {
                Some(Scripted::Confirm(r)) => Ok(r),
                other => panic!("confirm {m:?}: script has {other:?}"),
            }
        }
    }

    fn sel(k: usize) -> Scripted {
        Scripted::Select(Reply::Value(k))
    }
    fn text(t: &str) -> Scripted {
        Scripted::Text(Reply::Value(t.into()))
    }
    /// "y" at the send confirmation.
    fn yes() -> Scripted {
        Scripted::Confirm(Reply::Value(true))
    }
    /// Enter (no) at the send confirmation.
    fn no() -> Scripted {
        Scripted::Confirm(Reply::Value(false))
    }

    fn q(id: &str, labels: &[&str], multi: bool) -> Question {
        Question {
            id: id.into(),
            question: format!("question {id}?"),
            detail: None,
            header: None,
            options: (!labels.is_empty()).then(|| {
                labels
                    .iter()
                    .map(|l| QuestionOption {
                        label: l.to_string(),
                        description: None,
                    })
                    .collect()
            }),
            multi_select: multi.then_some(true),
            intent: None,
            editable: None,
        }
    }

    fn plan(approve: &str, labels: &[&str], detail: &str) -> Question {
        let mut q = q("plan", labels, false);
        q.detail = Some(detail.into());
        q.intent = Some(Intent {
            kind: "plan-review".into(),
            approve: approve.into(),
        });
        q
    }

    fn run(questions: &[Question], replies: Vec<Scripted>) -> (RequestEnd, Script) {
        let mut s = Script {
            replies: replies.into(),
            ..Default::default()
        };
        let end = review(&mut s, questions).expect("the script ends the request");
        assert!(s.replies.is_empty(), "unused replies: {:?}", s.replies);
        if let RequestEnd::Answer(a) = &end {
            check_answer(questions, a).expect("the screen only builds valid answers");
        }
        (end, s)
    }

    fn items(end: RequestEnd) -> Vec<AnswerItem> {
        match end {
            RequestEnd::Answer(a) => a.answers,
            other => panic!("not an answer: {other:?}"),
        }
    }

    #[test]
    fn single_select_picks_a_label() {
        let (end, _) = run(
            &[q("db", &["Postgres", "SQLite"], false)],
            vec![sel(1), yes()],
        );
        assert_eq!(items(end)[0].selected, vec!["SQLite".to_string()]);
    }

    #[test]
    fn single_select_other_overrides_with_custom_and_empty_selection() {
        let qs = [q("db", &["Postgres", "SQLite"], false)];
        // Other, an empty text (back to the list), Other again, real text.
        let (end, _) = run(&qs, vec![sel(2), text("  "), sel(2), text("MySQL"), yes()]);
        let it = &items(end)[0];
        assert!(it.selected.is_empty());
        assert_eq!(it.custom.as_deref(), Some("MySQL"));
    }

    #[test]
    fn multi_select_with_other_supplements() {
        let qs = [q("f", &["a", "b", "c"], true)];
        let (end, _) = run(
            &qs,
            vec![
                Scripted::Multi(Reply::Value(vec![0, 2, 3])),
                text("d too"),
                yes(),
            ],
        );
        let it = &items(end)[0];
        assert_eq!(it.selected, vec!["a".to_string(), "c".to_string()]);
        assert_eq!(it.custom.as_deref(), Some("d too"));
    }

    #[test]
    fn multi_select_nothing_is_a_skip() {
        let qs = [q("f", &["a", "b"], true)];
        let (end, _) = run(&qs, vec![Scripted::Multi(Reply::Value(vec![])), yes()]);
        assert!(items(end)[0].is_skip());
    }

    #[test]
    fn free_text_empty_skips() {
        let (end, _) = run(&[q("note", &[], false)], vec![text(""), yes()]);
        assert!(items(end)[0].is_skip());
    }

    #[test]
    fn batch_skip_then_summary_submit() {
        let qs = [q("a", &["x", "y"], false), q("b", &["z"], false)];
        // a: skip (index 3 = Skip after 2 options + Other); b: z; summary: submit.
        let (end, s) = run(&qs, vec![sel(3), sel(0), sel(0), yes()]);
        let its = items(end);
        assert!(its[0].is_skip());
        assert_eq!(its[1].selected, vec!["z".to_string()]);
        assert!(
            s.said.iter().any(|t| t.contains("(skipped)")),
            "{:?}",
            s.said
        );
    }

    #[test]
    fn summary_revise_returns_to_the_summary() {
        let qs = [q("a", &["x", "y"], false), q("b", &["z"], false)];
        // a: x; b: z; summary: revise 1 (index 1); a: y; summary: submit.
        let (end, _) = run(&qs, vec![sel(0), sel(0), sel(1), sel(1), sel(0), yes()]);
        assert_eq!(items(end)[0].selected, vec!["y".to_string()]);
    }

    #[test]
    fn menu_via_esc_skips_and_cancels() {
        let qs = [q("a", &["x"], false)];
        // Esc → menu: Back(0), Skip(1), Cancel(2), Later(3), Quit(4) (no previous).
        let (end, _) = run(
            &qs,
            vec![Scripted::Select(Reply::Esc), sel(2), text("wrong team")],
        );
        assert_eq!(end, RequestEnd::Cancel(Some("wrong team".into())));
        let (end, _) = run(&qs, vec![Scripted::Select(Reply::Esc), sel(1), yes()]);
        assert!(items(end)[0].is_skip());
        let (end, _) = run(&qs, vec![sel(3), sel(4)]);
        assert_eq!(end, RequestEnd::Quit);
    }

    #[test]
    fn plan_review_approves_by_label_whatever_its_position() {
        // The asker's order: 0 Revise, 1 Ship it (approves), 2 feedback.
        let qs = [plan("Ship it", &["Revise", "Ship it"], "1. a\n2. b")];
        let (end, s) = run(&qs, vec![sel(1), yes()]);
        let it = &items(end)[0];
        assert_eq!(it.selected, vec!["Ship it".to_string()]);
        assert_eq!(decision(&qs[0], it), Some(Decision::Approved));
        assert!(
            s.said.iter().any(|t| t.contains("1. a")),
            "the plan is shown"
        );
    }

    #[test]
    fn plan_review_decline_with_feedback_is_custom_only() {
        let qs = [plan("Ship it", &["Revise", "Ship it"], "plan")];
        // 0 Revise (declines), 1 approve, 2 feedback.
        let (end, _) = run(&qs, vec![sel(2), text("split step 2"), yes()]);
        let it = &items(end)[0];
        assert!(it.selected.is_empty());
        assert_eq!(it.custom.as_deref(), Some("split step 2"));
        assert_eq!(decision(&qs[0], it), Some(Decision::Declined));
        let (end, _) = run(&qs, vec![sel(0), yes()]);
        assert_eq!(items(end)[0].selected, vec!["Revise".to_string()]);
    }

    #[test]
    fn plan_review_offers_the_asker_order_and_starts_on_feedback_not_approve() {
        let qs = [plan("Ship it", &["Revise", "Ship it", "Later"], "plan")];
        let (_, s) = run(&qs, vec![sel(1), yes()]);
        let (items, start) = &s.lists[0];
        assert_eq!(
            &items[..4],
            &[
                "Revise (declines)",
                "Ship it (approves)",
                "Later (declines)",
                "Decline with feedback"
            ]
        );
        assert_eq!(*start, 3, "the cursor starts on Decline with feedback");
    }

    #[test]
    fn the_confirmation_shows_the_whole_feedback_first() {
        let qs = [plan("Ship it", &["Revise", "Ship it"], "plan")];
        let feedback = "Split step 2 into two migrations, one per table, so that each can be rolled back alone.\nAnd keep the old column until the reads have moved.\nLast line: THE-END";
        let (end, s) = run(&qs, vec![sel(2), text(feedback), yes()]);
        assert_eq!(items(end)[0].custom.as_deref(), Some(feedback));
        let shown = s.said.join("\n");
        let at = shown
            .find("This will be sent:")
            .expect("the answer is printed whole");
        let words: Vec<&str> = shown[at..].split_whitespace().collect();
        for w in feedback.split_whitespace() {
            assert!(words.contains(&w), "{w:?} missing from {shown}");
        }
        assert!(
            s.said.iter().any(|t| t == "Send the answer above?"),
            "{:?}",
            s.said
        );
        assert!(shown.lines().all(|l| l.chars().count() < 80), "{shown}");
    }

    #[test]
    fn long_plans_are_paged() {
        let long: String = (0..100).map(|k| format!("- step {k}\n")).collect();
        let qs = [plan("ok", &["ok"], &long)];
        let (_, s) = run(&qs, vec![sel(0), yes()]);
        assert_eq!(s.paged, 1);
        // Esc, back to the question: not paged again; "Read the plan again" pages it.
        let (_, s) = run(
            &qs,
            vec![Scripted::Select(Reply::Esc), sel(0), sel(2), sel(0), yes()],
        );
        assert_eq!(s.paged, 2);
    }

    #[test]
    fn unknown_intent_falls_back_to_the_option_list() {
        let mut qq = plan("ok", &["no", "ok"], "x");
        qq.intent.as_mut().unwrap().kind = "future-kind".into();
        // Plain list: 0 no, 1 ok.
        let (end, _) = run(&[qq], vec![sel(0), yes()]);
        assert_eq!(items(end)[0].selected, vec!["no".to_string()]);
    }

    #[test]
    fn no_at_the_send_confirmation_sends_nothing_and_goes_back() {
        // One question: back to it (a long plan is not paged again), then a new choice.
        let long: String = (0..100).map(|k| format!("- step {k}\n")).collect();
        let qs = [plan("ok", &["ok", "no"], &long)];
        let (end, s) = run(&qs, vec![sel(0), no(), sel(1), yes()]);
        assert_eq!(items(end)[0].selected, vec!["no".to_string()]);
        assert_eq!(s.paged, 1);
        assert!(
            s.said.iter().any(|t| t == "Send: approved (ok)?"),
            "the confirmation names the approval: {:?}",
            s.said
        );
        // A batch: back to the summary.
        let qs = [q("a", &["x"], false), q("b", &["z"], false)];
        let (end, _) = run(&qs, vec![sel(0), sel(0), sel(0), no(), sel(0), yes()]);
        assert_eq!(items(end).len(), 2);
    }

    #[test]
    fn enter_alone_everywhere_never_ends_a_request() {
        // A held Enter: every select takes its starting entry, every text is empty, every
        // multi-select is unticked, every confirmation is its default (no). Two hundred
        // such keys end no request, whatever the question.
        let long: String = (0..100).map(|k| format!("- step {k}\n")).collect();
        let cases = [
            vec![plan("ok", &["ok", "no"], &long)],
            vec![plan("ok", &["no", "ok"], "short")],
            vec![q("note", &[], false)],
            vec![q("f", &["a", "b"], true)],
            vec![q("db", &["x", "y"], false)],
            vec![q("a", &["x"], false), q("b", &[], false)],
        ];
        for qs in cases {
            let mut p = Held { keys: 200 };
            assert_eq!(review(&mut p, &qs), Err(Stop::Interrupted), "{qs:?}");
        }
    }

    /// Enter alone, `keys` times, then Ctrl-C.
    struct Held {
        keys: usize,
    }

    impl Held {
        fn key(&mut self) -> Result<(), Stop> {
            if self.keys == 0 {
                return Err(Stop::Interrupted);
            }
            self.keys -= 1;
            Ok(())
        }
    }

    impl Prompter for Held {
        fn style(&self) -> Style {
            Style::PLAIN
        }
        fn size(&self) -> (usize, usize) {
            (80, 24)
        }
        fn say(&mut self, _: &str) {}
        fn select(
            &mut self,
            _: &str,
            _: &[String],
            _: &str,
            start: usize,
        ) -> Result<Reply<usize>, Stop> {
            self.key()?;
            Ok(Reply::Value(start))
        }
        fn multi(
            &mut self,
            _: &str,
            _: &[String],
            _: &str,
            d: &[usize],
        ) -> Result<Reply<Vec<usize>>, Stop> {
            self.key()?;
            Ok(Reply::Value(d.to_vec()))
        }
        fn text(&mut self, _: &str, initial: &str, _: &str) -> Result<Reply<String>, Stop> {
            self.key()?;
            Ok(Reply::Value(initial.to_string()))
        }
        fn pager(&mut self, _: &str, _: &[String]) -> Result<(), Stop> {
            // The real pager leaves only on q or Esc: a held Enter never gets out.
            loop {
                self.key()?;
            }
        }
        fn confirm(&mut self, _: &str, _: &str) -> Result<Reply<bool>, Stop> {
            self.key()?;
            Ok(Reply::Value(false))
        }
    }
}
