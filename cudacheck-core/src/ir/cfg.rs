//! The control-flow graph of a function, built once, and its dominator tree.
//!
//! Blocks are ranges of the function's statements ([`Function::stmts`]): a label starts one,
//! a branch, `ret`, `exit` or `trap` ends one. Successors follow [`Flow`]: a guarded
//! instruction may also fall through; an indirect branch (`brx.idx`) may go to any label of
//! the function (sound, and rare in NVRTC's output). Dominators are computed with the
//! iterative algorithm of Cooper, Harvey and Kennedy ("A Simple, Fast Dominance Algorithm",
//! 2001) over the reverse postorder.

use std::collections::HashMap;
use std::ops::Range;

use super::opcode::{effects, Flow};
use super::read::{Function, Guard, StmtKind};

/// A block's index in [`Cfg::blocks`].
pub type BlockId = usize;

/// A basic block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Block {
    /// Indices into [`Function::stmts`].
    pub stmts: Range<usize>,
    /// The label that starts the block, if one does.
    pub label: Option<String>,
    pub succs: Vec<BlockId>,
    pub preds: Vec<BlockId>,
    /// When a predicate guards the transfer that ends the block: which edge is taken on
    /// which value ([`Cfg::condition`]).
    pub branch: Option<Branch>,
}

/// A guarded control transfer at the end of a block (`@%p1 bra $L`, `@!%p2 ret`, `@%p3 trap`):
/// `taken` are the blocks it goes to where the guard holds (none for `ret`, `exit`, `trap`),
/// `fall` the next block, reached where it does not.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Branch {
    pub guard: Guard,
    pub taken: Vec<BlockId>,
    pub fall: Option<BlockId>,
}

/// The control-flow graph of one function; block 0 is the entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cfg {
    pub blocks: Vec<Block>,
    /// Immediate dominators (`idom[0] == 0`; `None` for a block the entry does not reach).
    pub idom: Vec<Option<BlockId>>,
    /// The blocks in reverse postorder from the entry (unreachable ones left out).
    pub rpo: Vec<BlockId>,
}

#[cfg(test)]
thread_local! {
    /// How many graphs this thread has built: a test counts them (one per function).
    pub(crate) static CFGS_BUILT: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

impl Cfg {
    /// Builds the graph of `f`.
    pub fn new(f: &Function) -> Cfg {
        #[cfg(test)]
        CFGS_BUILT.with(|n| n.set(n.get() + 1));
        let mut blocks = split(f);
        let by_label: HashMap<String, BlockId> = blocks
            .iter()
            .enumerate()
            .filter_map(|(b, blk)| blk.label.clone().map(|l| (l, b)))
            .collect();
        let n = blocks.len();
        let succs: Vec<(Vec<BlockId>, Option<Branch>)> = blocks
            .iter()
            .enumerate()
            .map(|(b, blk)| successors(f, blk, b, n, &by_label))
            .collect();
        for (blk, (s, branch)) in blocks.iter_mut().zip(succs) {
            blk.succs = s;
            blk.branch = branch;
        }
        for b in 0..n {
            for s in blocks[b].succs.clone() {
                if !blocks[s].preds.contains(&b) {
                    blocks[s].preds.push(b);
                }
            }
        }
        let rpo = reverse_postorder(&blocks);
        let idom = dominators(&blocks, &rpo);
        Cfg { blocks, idom, rpo }
    }

    /// Whether block `a` dominates block `b` (every path from the entry to `b` passes `a`).
    pub fn dominates(&self, a: BlockId, mut b: BlockId) -> bool {
        if self.idom[b].is_none() {
            return false;
        }
        loop {
            if a == b {
                return true;
            }
            match self.idom[b] {
                Some(p) if p != b => b = p,
                _ => return false,
            }
        }
    }

    /// The value of a predicate the edge `from -> to` is taken on: `Some((pred, true))` when
    /// only a guard `@pred` sends control along it, `Some((pred, false))` when only its
    /// failing does; `None` for an edge taken either way (or no edge).
    pub fn condition(&self, from: BlockId, to: BlockId) -> Option<(&str, bool)> {
        let b = self.blocks.get(from)?.branch.as_ref()?;
        let holds = !b.guard.negated;
        match (b.taken.contains(&to), b.fall == Some(to)) {
            (true, false) => Some((b.guard.pred.as_str(), holds)),
            (false, true) => Some((b.guard.pred.as_str(), !holds)),
            _ => None,
        }
    }

    /// The block holding statement `stmt`.
    pub fn block_of(&self, stmt: usize) -> Option<BlockId> {
        let b = self.blocks.partition_point(|blk| blk.stmts.end <= stmt);
        (b < self.blocks.len() && self.blocks[b].stmts.contains(&stmt)).then_some(b)
    }
}

/// Splits the statements into blocks: a label starts one, a control transfer ends one.
fn split(f: &Function) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut start = 0;
    let mut label = None;
    let close = |blocks: &mut Vec<Block>, start: usize, end: usize, label: &mut Option<String>| {
        if end > start || label.is_some() || blocks.is_empty() {
            blocks.push(Block {
                stmts: start..end,
                label: label.take(),
                succs: Vec::new(),
                preds: Vec::new(),
                branch: None,
            });
        }
    };
    for (k, s) in f.stmts.iter().enumerate() {
        match &s.kind {
            StmtKind::Label(l) => {
                close(&mut blocks, start, k, &mut label);
                start = k;
                label = Some(l.clone());
            }
            StmtKind::Instr(i) if !matches!(effects(i).flow, Flow::Next | Flow::Call) => {
                close(&mut blocks, start, k + 1, &mut label);
                start = k + 1;
            }
            _ => {}
        }
    }
    close(&mut blocks, start, f.stmts.len(), &mut label);
    blocks
}

fn successors(
    f: &Function,
    blk: &Block,
    b: BlockId,
    n: usize,
    by_label: &HashMap<String, BlockId>,
) -> (Vec<BlockId>, Option<Branch>) {
    let next = (b + 1 < n).then_some(b + 1);
    let last = blk
        .stmts
        .clone()
        .rev()
        .find_map(|k| match &f.stmts[k].kind {
            StmtKind::Instr(i) => Some(i),
            _ => None,
        });
    let Some(i) = last else {
        return (next.into_iter().collect(), None);
    };
    let mut out: Vec<BlockId> = match effects(i).flow {
        Flow::Branch(l) => match by_label.get(l) {
            Some(&t) => vec![t],
            // A branch to a label that is not in this function: treat like an indirect one.
            None => {
                let mut all: Vec<BlockId> = by_label.values().copied().collect();
                all.sort_unstable();
                all
            }
        },
        Flow::Indirect => {
            let mut all: Vec<BlockId> = by_label.values().copied().collect();
            all.sort_unstable();
            all
        }
        Flow::Return | Flow::Exit => Vec::new(),
        Flow::Next | Flow::Call => return (next.into_iter().collect(), None),
    };
    let branch = i.guard.as_ref().map(|g| Branch {
        guard: g.clone(),
        taken: out.clone(),
        fall: next,
    });
    if branch.is_some() {
        out.extend(next);
    }
    out.dedup();
    (out, branch)
}

fn reverse_postorder(blocks: &[Block]) -> Vec<BlockId> {
    let mut seen = vec![false; blocks.len()];
    let mut post = Vec::with_capacity(blocks.len());
    // Iterative DFS: (block, next successor index).
    let mut stack = vec![(0usize, 0usize)];
    if blocks.is_empty() {
        return post;
    }
    seen[0] = true;
    while let Some((b, k)) = stack.pop() {
        if let Some(&s) = blocks[b].succs.get(k) {
            stack.push((b, k + 1));
            if !seen[s] {
                seen[s] = true;
                stack.push((s, 0));
            }
        } else {
            post.push(b);
        }
    }
    post.reverse();
    post
}

fn dominators(blocks: &[Block], rpo: &[BlockId]) -> Vec<Option<BlockId>> {
    let mut order = vec![usize::MAX; blocks.len()];
    for (k, &b) in rpo.iter().enumerate() {
        order[b] = k;
    }
    let mut idom: Vec<Option<BlockId>> = vec![None; blocks.len()];
    if rpo.is_empty() {
        return idom;
    }
    idom[rpo[0]] = Some(rpo[0]);
    let intersect = |idom: &[Option<BlockId>], mut a: BlockId, mut b: BlockId| {
        while a != b {
            while order[a] > order[b] {
                a = idom[a].expect("processed");
            }
            while order[b] > order[a] {
                b = idom[b].expect("processed");
            }
        }
        a
    };
    let mut changed = true;
    while changed {
        changed = false;
        for &b in &rpo[1..] {
            let mut new = None;
            for &p in &blocks[b].preds {
                if idom[p].is_none() {
                    continue;
                }
                new = Some(match new {
                    None => p,
                    Some(q) => intersect(&idom, p, q),
                });
            }
            if new.is_some() && idom[b] != new {
                idom[b] = new;
                changed = true;
            }
        }
    }
    idom
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn function(body: &str) -> Function {
        let ptx = format!(
            ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k(.param .u32 n)\n{{\n{body}\n}}\n"
        );
        super::super::read::parse(&ptx).unwrap().functions.remove(0)
    }

    #[test]
    fn diamond_and_loop() {
        let f = function(
            "ld.param.u32 %r1, [n];\n\
             setp.eq.s32 %p1, %r1, 0;\n\
             @%p1 bra $L_else;\n\
             mov.u32 %r2, 1;\n\
             bra.uni $L_join;\n\
             $L_else:\n\
             mov.u32 %r2, 2;\n\
             $L_join:\n\
             add.s32 %r2, %r2, 1;\n\
             setp.lt.s32 %p2, %r2, %r1;\n\
             @%p2 bra $L_join;\n\
             ret;",
        );
        let g = Cfg::new(&f);
        // entry | then | else | join(loop) | ret
        assert_eq!(g.blocks.len(), 5);
        assert_eq!(g.blocks[0].succs, [2, 1]);
        assert_eq!(g.blocks[1].succs, [3]);
        assert_eq!(g.blocks[2].succs, [3]);
        assert_eq!(g.blocks[3].succs, [3, 4]);
        assert_eq!(g.blocks[3].preds, [1, 2, 3]);
        assert_eq!(g.condition(0, 2), Some(("%p1", true)));
        assert_eq!(g.condition(0, 1), Some(("%p1", false)));
        assert_eq!(g.condition(1, 3), None, "an unguarded branch");
        assert_eq!(g.condition(3, 3), Some(("%p2", true)));
        assert_eq!(g.condition(3, 4), Some(("%p2", false)));
        assert_eq!(g.condition(0, 3), None, "no edge");
        assert_eq!(g.idom, [Some(0), Some(0), Some(0), Some(0), Some(3)]);
        assert!(g.dominates(0, 4) && g.dominates(3, 4) && !g.dominates(1, 3));
        assert_eq!(g.block_of(2), Some(0));
        assert_eq!(
            g.block_of(5),
            Some(2),
            "the label statement starts its block"
        );
    }

    #[test]
    fn a_guarded_trap_or_return_falls_through_where_its_guard_fails() {
        for end in ["trap", "ret", "exit"] {
            let f = function(&format!(
                "setp.ge.u32 %p1, %r1, 4;\n@%p1 {end};\nmov.u32 %r2, %r1;\n@!%p1 bra $L;\nret;\n$L:\nret;"
            ));
            let g = Cfg::new(&f);
            assert_eq!(g.blocks[0].succs, [1], "{end}");
            assert_eq!(g.condition(0, 1), Some(("%p1", false)), "{end}");
            // `@!%p1 bra`: taken where `%p1` is false.
            assert_eq!(g.condition(1, 3), Some(("%p1", false)), "{end}");
            assert_eq!(g.condition(1, 2), Some(("%p1", true)), "{end}");
        }
        // A branch whose target is the next block goes there either way.
        let f = function("@%p1 bra $L;\n$L:\nret;");
        let g = Cfg::new(&f);
        assert_eq!(g.blocks[0].succs, [1]);
        assert_eq!(g.condition(0, 1), None);
    }

    #[test]
    fn unreachable_blocks_have_no_dominator() {
        let f = function("bra.uni $L_end;\nmov.u32 %r1, 1;\n$L_end:\nret;");
        let g = Cfg::new(&f);
        assert_eq!(g.blocks.len(), 3);
        assert_eq!(g.idom[1], None);
        assert!(!g.dominates(0, 1));
        assert_eq!(g.rpo, [0, 2]);
    }
}
