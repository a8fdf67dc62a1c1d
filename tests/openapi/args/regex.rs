//! A sampler for the regular expressions API descriptions use: strings that match the subset
//! of regex syntax seen in real documents (classes, groups, alternation, bounded repetition).

/// Strings matching `pattern` (when the sampler understands it): the shortest one, one with
/// `min` characters where repetition allows, and one with every repetition at least once.
pub fn regex_samples(pattern: &str, min: usize) -> Vec<String> {
    let Some(node) = Parser::new(pattern).parse_alternation() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (reps, choice) in [(0usize, 0usize), (1, 0), (min.max(2), 0), (1, 1)] {
        let mut s = String::new();
        node.sample(reps, choice, &mut s);
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

#[derive(Debug)]
enum Node {
    Empty,
    Char(char),
    /// A class: its ranges and whether it is negated.
    Class(Vec<(char, char)>, bool),
    Seq(Vec<Node>),
    Alt(Vec<Node>),
    Repeat(Box<Node>, usize, Option<usize>),
}

impl Node {
    /// Appends a match: repetitions take `max(lower bound, reps)` (clamped to the upper bound);
    /// alternations take branch `choice` when there is one.
    fn sample(&self, reps: usize, choice: usize, out: &mut String) {
        match self {
            Node::Empty => {}
            Node::Char(c) => out.push(*c),
            Node::Class(ranges, negated) => out.push(class_char(ranges, *negated)),
            Node::Seq(nodes) => nodes.iter().for_each(|n| n.sample(reps, choice, out)),
            Node::Alt(branches) => {
                branches[choice.min(branches.len() - 1)].sample(reps, choice, out);
            }
            Node::Repeat(node, lo, hi) => {
                let n = reps.max(*lo).min(hi.unwrap_or(usize::MAX));
                for _ in 0..n {
                    node.sample(reps, choice, out);
                }
            }
        }
    }
}

/// A character in the class (or outside it, negated): letters and digits first.
fn class_char(ranges: &[(char, char)], negated: bool) -> char {
    let inside = |c: char| ranges.iter().any(|(a, b)| *a <= c && c <= *b);
    if negated {
        return "a1xZ_-.".chars().find(|c| !inside(*c)).unwrap_or('~');
    }
    "a1A".chars().find(|c| inside(*c)).unwrap_or(ranges[0].0)
}

struct Parser<'p> {
    chars: Vec<char>,
    pos: usize,
    _pattern: &'p str,
}

impl<'p> Parser<'p> {
    fn new(pattern: &'p str) -> Self {
        Self {
            chars: pattern.chars().collect(),
            pos: 0,
            _pattern: pattern,
        }
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn next(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += 1;
        Some(c)
    }

    fn parse_alternation(&mut self) -> Option<Node> {
        let mut branches = vec![self.parse_sequence()?];
        while self.peek() == Some('|') {
            self.pos += 1;
            branches.push(self.parse_sequence()?);
        }
        Some(if branches.len() == 1 {
            branches.pop().unwrap_or(Node::Empty)
        } else {
            Node::Alt(branches)
        })
    }

    fn parse_sequence(&mut self) -> Option<Node> {
        let mut nodes = Vec::new();
        while let Some(c) = self.peek() {
            if c == '|' || c == ')' {
                break;
            }
            let atom = self.parse_atom()?;
            let atom = self.parse_quantifier(atom)?;
            nodes.push(atom);
        }
        Some(Node::Seq(nodes))
    }

    fn parse_atom(&mut self) -> Option<Node> {
        match self.next()? {
            '^' | '$' => Some(Node::Empty),
            '.' => Some(Node::Char('a')),
            '(' => {
                if self.peek() == Some('?') {
                    self.pos += 1;
                    match self.next()? {
                        ':' => {}
                        // Lookarounds and named groups: not sampled.
                        _ => return None,
                    }
                }
                let inner = self.parse_alternation()?;
                (self.next()? == ')').then_some(inner)
            }
            '[' => self.parse_class(),
            '\\' => self.parse_escape(false).map(|r| match r {
                Escaped::Char(c) => Node::Char(c),
                Escaped::Class(ranges, negated) => Node::Class(ranges, negated),
            }),
            c => Some(Node::Char(c)),
        }
    }

    fn parse_quantifier(&mut self, atom: Node) -> Option<Node> {
        let (lo, hi) = match self.peek() {
            Some('?') => (0, Some(1)),
            Some('*') => (0, None),
            Some('+') => (1, None),
            Some('{') => {
                let start = self.pos;
                self.pos += 1;
                let mut text = String::new();
                while let Some(c) = self.next() {
                    if c == '}' {
                        break;
                    }
                    text.push(c);
                }
                let parsed = match text.split_once(',') {
                    None => text.trim().parse().ok().map(|n| (n, Some(n))),
                    Some((a, b)) => {
                        let lo = a.trim().parse().ok();
                        let hi = if b.trim().is_empty() {
                            Some(None)
                        } else {
                            b.trim().parse().ok().map(Some)
                        };
                        lo.zip(hi)
                    }
                };
                match parsed {
                    Some(q) => {
                        self.pos -= 1; // the '}' is consumed below
                        q
                    }
                    None => {
                        // A literal `{`.
                        self.pos = start;
                        return Some(atom);
                    }
                }
            }
            _ => return Some(atom),
        };
        self.pos += 1;
        // Lazy / possessive markers.
        if matches!(self.peek(), Some('?' | '+')) {
            self.pos += 1;
        }
        Some(Node::Repeat(Box::new(atom), lo, hi))
    }

    fn parse_class(&mut self) -> Option<Node> {
        let negated = if self.peek() == Some('^') {
            self.pos += 1;
            true
        } else {
            false
        };
        let mut ranges = Vec::new();
        let mut first = true;
        loop {
            let c = self.next()?;
            if c == ']' && !first {
                break;
            }
            first = false;
            let lo = match c {
                '\\' => match self.parse_escape(true)? {
                    Escaped::Char(c) => c,
                    Escaped::Class(more, false) => {
                        ranges.extend(more);
                        continue;
                    }
                    Escaped::Class(_, true) => return None,
                },
                c => c,
            };
            if self.peek() == Some('-') && self.chars.get(self.pos + 1).is_some_and(|c| *c != ']') {
                self.pos += 1;
                let hi = match self.next()? {
                    '\\' => match self.parse_escape(true)? {
                        Escaped::Char(c) => c,
                        Escaped::Class(..) => return None,
                    },
                    c => c,
                };
                ranges.push((lo, hi));
            } else {
                ranges.push((lo, lo));
            }
        }
        if ranges.is_empty() {
            return None;
        }
        Some(Node::Class(ranges, negated))
    }

    fn parse_escape(&mut self, _in_class: bool) -> Option<Escaped> {
        let c = self.next()?;
        let digits = vec![('0', '9')];
        let word = vec![('a', 'z'), ('A', 'Z'), ('0', '9'), ('_', '_')];
        let space = vec![(' ', ' '), ('\t', '\t')];
        Some(match c {
            'd' => Escaped::Class(digits, false),
            'D' => Escaped::Class(digits, true),
            'w' => Escaped::Class(word, false),
            'W' => Escaped::Class(word, true),
            's' => Escaped::Class(space, false),
            'S' => Escaped::Class(space, true),
            'n' => Escaped::Char('\n'),
            't' => Escaped::Char('\t'),
            'b' | 'B' => return None,
            'u' => {
                let hex: String = (0..4).filter_map(|_| self.next()).collect();
                Escaped::Char(char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?)
            }
            c if c.is_ascii_digit() => return None,
            c => Escaped::Char(c),
        })
    }
}

enum Escaped {
    Char(char),
    Class(Vec<(char, char)>, bool),
}
