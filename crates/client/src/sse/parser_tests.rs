//! The parser against the WHATWG examples, every line ending and chunking, and hostile
//! input (a huge line, endless data, NULs, garbage).

use proptest::prelude::*;

use super::parser::{Event, Limits, ParseError, Parser};

fn parse_with(limits: Limits, chunks: &[&[u8]]) -> (Vec<Event>, Parser) {
    let mut parser = Parser::new(limits);
    let mut events = Vec::new();
    for chunk in chunks {
        parser.feed(chunk, |e| events.push(e)).unwrap();
    }
    (events, parser)
}

fn parse(stream: &str) -> Vec<Event> {
    parse_with(Limits::default(), &[stream.as_bytes()]).0
}

/// The events without their wire sizes: a CRLF split across chunks after a blank line
/// counts its LF toward the next event.
fn strip(events: Vec<Event>) -> Vec<(Option<String>, String, Option<String>)> {
    events
        .into_iter()
        .map(|e| (e.event, e.data, e.id))
        .collect()
}

fn datas(events: &[Event]) -> Vec<&str> {
    events.iter().map(|e| e.data.as_str()).collect()
}

#[test]
fn spec_example_multi_line_data() {
    let events = parse("data: YHOO\ndata: +2\ndata: 10\n\n");
    assert_eq!(datas(&events), ["YHOO\n+2\n10"]);
    assert_eq!(events[0].event, None);
    assert_eq!(events[0].id, None);
}

#[test]
fn spec_example_ids_and_comments() {
    let events = parse(
        ": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n\n",
    );
    assert_eq!(
        datas(&events),
        ["first event", "second event", " third event"]
    );
    assert_eq!(events[0].id.as_deref(), Some("1"));
    // `id` with no value resets the last event id to empty (no Last-Event-ID then).
    assert_eq!(events[1].id.as_deref(), Some(""));
    assert_eq!(events[2].id.as_deref(), Some(""));
}

#[test]
fn spec_example_empty_data_and_unterminated_event() {
    let events = parse("data\n\ndata\ndata\n\ndata:");
    assert_eq!(datas(&events), ["", "\n"]);
}

#[test]
fn spec_example_space_after_colon_is_optional() {
    let events = parse("data:test\n\ndata: test\n\n");
    assert_eq!(datas(&events), ["test", "test"]);
}

#[test]
fn event_types_and_unknown_fields() {
    let events = parse("event: tick\ndata: 1\nfoo: bar\n\nevent\ndata: 2\n\nevent: \ndata: 3\n\n");
    assert_eq!(events[0].event.as_deref(), Some("tick"));
    assert_eq!(events[1].event, None, "an empty type is a message");
    assert_eq!(events[2].event, None);
    // The type does not carry over to the next event.
    assert_eq!(parse("event: a\ndata: 1\n\ndata: 2\n\n")[1].event, None);
    // A blank line without data dispatches nothing and clears the type.
    assert_eq!(parse("event: a\n\ndata: 2\n\n")[0].event, None);
}

#[test]
fn every_line_ending_and_any_chunking_give_the_same_events() {
    let lf = "event: tick\nid: 7\ndata: a\ndata: b\n\n: c\ndata: z\n\n";
    let expected = parse(lf);
    assert_eq!(expected.len(), 2);
    for ending in ["\r\n", "\r"] {
        let text = lf.replace('\n', ending);
        let events = parse(&text);
        assert_eq!(datas(&events), datas(&expected), "{ending:?}");
        assert_eq!(events[0].id.as_deref(), Some("7"));
        // One byte at a time: a CRLF split across chunks is one line end.
        let bytes = text.as_bytes();
        let chunks: Vec<&[u8]> = bytes.chunks(1).collect();
        let (split, _) = parse_with(Limits::default(), &chunks);
        assert_eq!(strip(split), strip(events), "{ending:?} byte by byte");
    }
    // A CR then an LF in the next chunk, then a blank line: one line end, then a dispatch.
    let (events, _) = parse_with(Limits::default(), &[b"data: x\r", b"\n", b"\r\n"]);
    assert_eq!(datas(&events), ["x"]);
}

#[test]
fn a_leading_bom_is_dropped_once_even_split() {
    let text = "\u{FEFF}data: a\n\n\u{FEFF}data: b\n\ndata: c\n\n";
    let events = parse(text);
    // The second BOM makes `\u{FEFF}data` an unknown field: no event "b".
    assert_eq!(datas(&events), ["a", "c"]);
    let bytes = text.as_bytes();
    let chunks: Vec<&[u8]> = bytes.chunks(1).collect();
    assert_eq!(
        strip(parse_with(Limits::default(), &chunks).0),
        strip(events)
    );
    // A stream shorter than a BOM, and one that starts like one but is not.
    assert!(parse_with(Limits::default(), &[b"\xEF"]).0.is_empty());
    let (events, _) = parse_with(Limits::default(), &[b"\xEF", b"x\ndata: y\n\n"]);
    assert_eq!(datas(&events), ["y"]);
}

#[test]
fn retry_takes_digits_only() {
    let (_, p) = parse_with(Limits::default(), &[b"retry: 2500\n\n"]);
    assert_eq!(p.retry_ms(), Some(2500));
    for bad in [
        "retry: 1a\n",
        "retry: -1\n",
        "retry:\n",
        "retry: 1.5\n",
        "retry:  10\n",
    ] {
        let (_, p) = parse_with(Limits::default(), &[bad.as_bytes()]);
        assert_eq!(p.retry_ms(), None, "{bad:?}");
    }
    let (_, p) = parse_with(Limits::default(), &[b"retry: 99999999999999999999999\n"]);
    assert_eq!(p.retry_ms(), Some(u64::MAX));
}

#[test]
fn resume_keeps_the_last_id_and_retry_only() {
    let (_, p) = parse_with(
        Limits::default(),
        &[b"retry: 10\nid: 5\ndata: x\n\nevent: half\ndata: cut"],
    );
    assert_eq!(p.last_event_id(), Some("5"));
    let mut next = p.resume();
    assert_eq!(
        (next.last_event_id(), next.retry_ms()),
        (Some("5"), Some(10))
    );
    let mut events = Vec::new();
    next.feed(b"data: y\n\n", |e| events.push(e)).unwrap();
    assert_eq!(events[0].event, None, "the cut event's type is gone");
    assert_eq!(events[0].data, "y");
}

#[test]
fn wire_bytes_add_up_to_the_stream() {
    let text = ": hi\nretry: 5\n\nevent: a\r\ndata: 1\r\n\r\nid: 2\rdata: 22\r\r";
    let events = parse(text);
    assert_eq!(events.len(), 2);
    let total: usize = events.iter().map(|e| e.wire_bytes).sum();
    assert_eq!(total, text.len());
}

// ---- hostile input ----

const SMALL: Limits = Limits {
    max_line: 64,
    max_event: 256,
};

fn feed_all(limits: Limits, chunks: impl Iterator<Item = Vec<u8>>) -> Result<usize, ParseError> {
    let mut parser = Parser::new(limits);
    let mut n = 0;
    for chunk in chunks {
        parser.feed(&chunk, |_| n += 1)?;
        assert!(parser.buffered() <= 3 * limits.max_line + limits.max_event);
    }
    Ok(n)
}

#[test]
fn a_huge_line_is_refused_at_its_limit() {
    // One endless line in small chunks: refused once past the limit, not buffered.
    let err = feed_all(SMALL, std::iter::repeat_n(b"data: xxxxxxxx".to_vec(), 1000)).unwrap_err();
    assert_eq!(err, ParseError::LineTooLong { limit: 64 });
    // The same in one chunk, with its end in it.
    let mut line = vec![b'x'; 65];
    line.push(b'\n');
    assert_eq!(
        feed_all(SMALL, std::iter::once(line)).unwrap_err(),
        ParseError::LineTooLong { limit: 64 }
    );
    // A line of exactly the limit is fine.
    let mut line = b"data: ".to_vec();
    line.resize(64, b'y');
    line.extend_from_slice(b"\n\n");
    assert_eq!(feed_all(SMALL, std::iter::once(line)), Ok(1));
}

#[test]
fn endless_data_without_a_blank_line_is_refused() {
    let err = feed_all(
        SMALL,
        std::iter::repeat_n(b"data: 0123456789\n".to_vec(), 1000),
    )
    .unwrap_err();
    assert_eq!(err, ParseError::EventTooLarge { limit: 256 });
    // Endless comments or ignored fields hold nothing: never an error.
    let n = feed_all(
        SMALL,
        std::iter::repeat_n(b": keep-alive\nfoo: bar\n".to_vec(), 10_000),
    );
    assert_eq!(n, Ok(0));
}

#[test]
fn nuls_and_invalid_utf8_are_survived() {
    let (events, p) = parse_with(
        Limits::default(),
        &[b"id: 1\n\nid: a\0b\ndata: x\0y\xFF\xFE\n\n"],
    );
    assert_eq!(p.last_event_id(), Some("1"), "an id with a NUL is ignored");
    assert_eq!(events[0].data, "x\0y\u{FFFD}\u{FFFD}");
    assert_eq!(events[0].id.as_deref(), Some("1"));
}

proptest! {
    #[test]
    fn garbage_never_panics_and_stays_bounded(
        chunks in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..200), 0..50)
    ) {
        let mut parser = Parser::new(SMALL);
        for chunk in &chunks {
            if parser.feed(chunk, |e| assert!(e.data.len() <= SMALL.max_event)).is_err() {
                break;
            }
            prop_assert!(parser.buffered() <= 3 * SMALL.max_line + SMALL.max_event);
        }
    }

    #[test]
    fn chunking_does_not_change_the_events(
        lines in prop::collection::vec(
            prop::sample::select(vec![
                "data: a", "data:b", "data", "event: t", "event", "id: 3", "id", ": c",
                "retry: 7", "", "", "x: y", "\u{FEFF}data: z",
            ]),
            0..40,
        ),
        ending in prop::sample::select(vec!["\n", "\r", "\r\n"]),
        cut in 1usize..7,
    ) {
        let text: String = lines.iter().map(|l| format!("{l}{ending}")).collect();
        let whole = parse_with(Limits::default(), &[text.as_bytes()]);
        let chunks: Vec<&[u8]> = text.as_bytes().chunks(cut).collect();
        let split = parse_with(Limits::default(), &chunks);
        prop_assert_eq!(strip(whole.0), strip(split.0));
        prop_assert_eq!(whole.1.retry_ms(), split.1.retry_ms());
        prop_assert_eq!(whole.1.last_event_id(), split.1.last_event_id());
    }
}
