/* The exact endgame solver in C: spades_env/solver.py's fast path, and search.c's endgames.
 *
 * Every hand is known (a "double dummy" position). The value of a position is what one side
 * (the max side) gets under optimal play by all four seats: the max side's entry of a payoff
 * table minus the other side's, each table indexed by the final tricks of the side's two
 * members. With tables of hand scores (spades_env/scoring.py, built by the caller) that is the
 * hand's score difference, nils, bags and their penalty included; with tables of trick counts,
 * the tricks the side takes.
 *
 * Method: alpha-beta over single cards, with
 *   - payoffs that are a nondecreasing function of the max side's tricks alone (no live nil,
 *     no bag penalty in reach or bags not priced: most game hands) solved as trick counts
 *     and mapped back (to_trick_counts);
 *   - a transposition table at the start of every trick, keyed by the four hands with ranks
 *     renumbered among the cards still in play (rank reduction, as in DDS), packed exactly
 *     into two words (an entry is 32 bytes, two to a cache line), the leader,
 *     whether spades are broken and, per side, the class of its tricks taken so far: two
 *     counts are one class when the payoff of every split of the remaining tricks differs by
 *     the same constant (a side without nils: equal sums, or contracts made with no bag
 *     penalty still reachable); the entry holds a lower and an upper bound relative to that
 *     constant, and the best card found;
 *   - equivalent cards played as one: two cards of one suit in one hand with no card between
 *     them still in another hand or on the table win exactly the same tricks;
 *   - payoff bounds: at the start of a trick, the best and worst the tables allow over every
 *     split of the remaining tricks that gives each seat and side its floor, compared with the
 *     window (a position decided already, or one that cannot reach the window, returns at
 *     once). Forced floors: top spades (a seat's above all others' are its own tricks, a
 *     side's above the opponents' its side's). The side on lead's floors (its bound only):
 *     quick tricks, the leader's winners of side suits it can cash before anyone can ruff, or
 *     every one of them once it has drawn the other hands' spades (its spades above all others
 *     at least as many as any other hand's, and spades may be led); the bounds are
 *     remembered by the tricks taken and the floors (a small cache: few of those recur);
 *   - move ordering: the table's best card, then (leading) the last two cards that cut off a
 *     search at this trick for this seat (killers), then cheap winners where the opponents
 *     hold the trick, low cards where the partner does, top cards of a suit when leading; around a
 *     nil not yet broken, its own highest losing card, its partner's overtaking or covering
 *     card, its opponents' low cards (a seat is a nil when its first trick costs its side
 *     more than its partner's would);
 *   - at the root, each card's value tested first at the values found for the cards before it
 *     (cards mostly share a few values), the most recent first;
 *   - the last trick played out directly (every seat holds one card).
 * The table is allocated per call (zeroed pages that cost nothing until touched; huge pages for
 * a whole hand's), so calls are independent and safe on several threads at once.
 */
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE         /* mmap's flags and madvise under -std=c99 */
#endif
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "solver.h"

#if defined(__linux__)
#include <sys/mman.h>
#endif

#ifdef __BMI2__
#include <immintrin.h>
#endif

typedef int64_t i64;
#define SUITMASK(s) ((uint64_t)0x1FFF << (13 * (s)))
#define NONSPADES (((uint64_t)1 << 39) - 1)
#define SPADE_FIRST 39
#define V_INF 0x3FFFFFFF

/* A table entry: 32 bytes, two to a cache line (a bucket). The position at a trick start is
 * stored exactly in two words: who holds each live card (two bits, in the order of the live
 * cards, suit by suit from the lowest), and the suits' lengths; that is the hands with ranks
 * renumbered among the cards still in play (see pack_position). */
typedef struct {
    uint64_t w[2];
    uint32_t key;           /* 0 = empty; else leader | broken << 2 | classes << 3 | 1 << 31 */
    int32_t lower, upper;
    int32_t best;           /* the best card found here (renumbered), or -1 */
} Entry;

enum { BOUNDS_BITS = 13 };
typedef struct { uint64_t key; int32_t low, high; } BoundsSlot;

typedef struct {
    uint64_t hands[4];
    int taken[4];
    int broken, tricks_played, tph, spades_lead, nsft, two_clubs, max_side;
    int nil[4];             /* seats whose side loses by their first trick (move ordering only) */
    /* the last two cards that cut off a search, by tricks played and seat (card + 1; 0: none),
     * the latest first, tried early when the seat leads: what refutes one position often
     * refutes its neighbours (killers; a card that cut off when following often leads well) */
    int killer[SOLVER_TABLE][4][2];
    /* taken_class's cache: [side][tricks left][a][b] -> class id (-1: not yet), and per side and
     * tricks left the classes found, each a fingerprint and a representative (a, b) */
    int16_t class_of[2][SOLVER_TABLE][SOLVER_TABLE][SOLVER_TABLE];
    int n_classes[2][SOLVER_TABLE];
    int32_t tab[2][SOLVER_TABLE][SOLVER_TABLE];
    Entry *tt;
    size_t tt_bytes;
    BoundsSlot *bounds;     /* payoff_bounds' results (key 0: empty), after the table in its memory */
    int bounds_shift;       /* 64 - log2 of its slots (fewer for short endings) */
    uint64_t tt_mask;
    i64 nodes;
    /* last, and not cleared by setup: only the first n_classes entries are ever read */
    struct { uint64_t fingerprint; uint8_t a, b; } classes[2][SOLVER_TABLE][SOLVER_TABLE * SOLVER_TABLE];
} Ctx;

static inline uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* Rank reduction (as in bridge's DDS): at a trick start only the order of the cards still in
 * play matters, so the table is keyed on who holds the n-th live card of each suit
 * (pack_position), and positions that differ only in which cards are gone share an entry. The
 * first trick's rules name cards (the two of clubs), but then every card is live and the
 * renumbering changes nothing. */
static inline uint64_t compress_bits(uint64_t bits, uint64_t mask) {
#ifdef __BMI2__
    return _pext_u64(bits, mask);
#else
    uint64_t out = 0;
    for (int i = 0; mask; mask &= mask - 1, i++)
        if (bits & mask & -mask) out |= (uint64_t)1 << i;
    return out;
#endif
}

static inline int nth_bit(uint64_t mask, int n) {
    while (n-- > 0) mask &= mask - 1;
    return __builtin_ctzll(mask);
}

/* A renumbered card back to the real card: the suit's n-th live card from the lowest. */
static inline int expand_card(int reduced, uint64_t live) {
    if (reduced < 0) return -1;
    int suit = reduced / 13;
    uint64_t m = live & SUITMASK(suit);
    if (__builtin_popcountll(m) <= reduced % 13) return -1;
    return nth_bit(m, reduced % 13);
}

/* A real card to its renumbered form: its suit's count of live cards below it. */
static inline int reduce_card(int card, uint64_t live) {
    if (card < 0) return -1;
    int suit = card / 13;
    uint64_t below = live & SUITMASK(suit) & (((uint64_t)1 << card) - 1);
    return 13 * suit + __builtin_popcountll(below);
}

/* The position's two table words: bit i of the low part of w[0] (w[1]) says whether the i-th
 * live card from the lowest (clubs first) is held by seat 1 or 3 (seat 2 or 3); the top bits
 * hold the lengths of clubs, diamonds and hearts (w[0]) and of spades (w[1]). Only the order
 * of the live cards matters, so positions that differ only in which cards are gone share
 * their words (rank reduction, as in bridge's DDS). At most 52 live cards: 52 + 12 bits. */
static inline void pack_position(const uint64_t *hands, uint64_t live, uint64_t *w) {
    uint64_t lengths = 0;
    for (int suit = 0; suit < 4; suit++)
        lengths |= (uint64_t)__builtin_popcountll(live & SUITMASK(suit)) << (4 * suit);
    w[0] = compress_bits(hands[1] | hands[3], live) | (lengths & 0xFFF) << 52;
    w[1] = compress_bits(hands[2] | hands[3], live) | (lengths >> 12) << 52;
}

static inline int packed_cards(const uint64_t *w) {
    return (int)((w[0] >> 52 & 15) + (w[0] >> 56 & 15) + (w[0] >> 60 & 15) + (w[1] >> 52 & 15));
}

static inline int beats(int card, int win_card) {
    return (card / 13 == win_card / 13 && card > win_card) || (card >= SPADE_FIRST && win_card < SPADE_FIRST);
}

static inline int32_t terminal(const Ctx *c) {
    int m = c->max_side, o = 1 - m;
    return c->tab[m][c->taken[m]][c->taken[m + 2]] - c->tab[o][c->taken[o]][c->taken[o + 2]];
}

/* What the tricks left can still come to, from a trick start: a floor on each seat's tricks
 * and on each side's. Forced floors hold whatever anyone plays; `cash` floors hold for the side
 * on lead when it plays to them. */
typedef struct { int seat[4], side[2]; } Floors;

/* Spades of `mine` above every spade of `theirs`: each wins the trick it falls to, except to a
 * higher spade in neither set. */
static inline int top_spades(uint64_t mine, uint64_t theirs) {
    mine &= SUITMASK(3);
    theirs &= SUITMASK(3);
    uint64_t above = theirs ? ~((((uint64_t)2) << (63 - __builtin_clzll(theirs))) - 1) : ~(uint64_t)0;
    return __builtin_popcountll(mine & above);
}

/* The forced floors: a seat's spades above every other seat's spades are its tricks; a spade
 * above the opponents' is its side's (only the partner can beat it), and one seat's such spades
 * fall to different tricks, so the side has at least the more of them one member holds. */
static void forced_floors(const Ctx *c, Floors *f) {
    const uint64_t *h = c->hands;
    for (int s = 0; s < 4; s++)
        f->seat[s] = top_spades(h[s], h[(s + 1) & 3] | h[(s + 2) & 3] | h[(s + 3) & 3]);
    for (int side = 0; side < 2; side++) {
        uint64_t theirs = h[1 - side] | h[3 - side];
        int a = top_spades(h[side], theirs), b = top_spades(h[side + 2], theirs);
        f->side[side] = a > b ? a : b;
    }
}

/* The floors the leader's side can make sure of by cashing (quick tricks, as in bridge's DDS):
 * the leader's cards of a side suit above the suit's other cards win, one lead each, while
 * every other seat holding a spade still follows the suit (a seat without spades cannot win
 * them); those tricks are the leader's, and its spades above the others' (forced) come on top,
 * in other tricks. Side suits can always be led after the first trick. Returns whether the
 * floors rose. */
static int cash_floors(const Ctx *c, int leader, const Floors *forced, int *own_floor, int *side_floor) {
    if (c->tricks_played == 0) return 0;
    const uint64_t *h = c->hands;
    int q = 0, qfull = 0;
    for (int suit = 0; suit < 3; suit++) {
        uint64_t mine = h[leader] & SUITMASK(suit), rest = 0;
        if (!mine) continue;
        for (int i = 1; i < 4; i++) rest |= h[(leader + i) & 3];
        rest &= SUITMASK(suit);
        uint64_t above = rest ? ~((((uint64_t)2) << (63 - __builtin_clzll(rest))) - 1) : ~(uint64_t)0;
        int k = __builtin_popcountll(mine & above);
        for (int i = 1; i < 4 && k; i++) {
            uint64_t other = h[(leader + i) & 3];
            if (other & SUITMASK(3)) {
                int follows = __builtin_popcountll(other & SUITMASK(suit));
                if (follows < k) k = follows;
            }
        }
        q += k;
        qfull += __builtin_popcountll(mine & above);
    }
    /* trumps drawn first: when the leader's spades above every other spade outnumber each other
     * seat's spades and it may lead them, it draws them all, keeping the lead, and then every
     * winner of the side suits is its own, uncapped (DDS's quick tricks with trumps drawn) */
    int longest = 0;
    for (int i = 1; i < 4; i++) {
        int n = __builtin_popcountll(h[(leader + i) & 3] & SUITMASK(3));
        if (n > longest) longest = n;
    }
    int drawn = 0;
    if (qfull > q && longest <= forced->seat[leader] &&
        (longest == 0 || c->spades_lead == 1 || (c->spades_lead == 0 && c->broken)))
        drawn = qfull + forced->seat[leader];
    if (!q && !drawn) return 0;
    int side = leader & 1;
    int own = q + forced->seat[leader];
    int total = q + top_spades(h[leader], h[1 - side] | h[3 - side]);
    if (drawn > own) own = drawn;
    if (drawn > total) total = drawn;
    *own_floor = own > forced->seat[leader] ? own : forced->seat[leader];
    *side_floor = total > forced->side[side] ? total : forced->side[side];
    return 1;
}

/* For each total s of the r tricks left, the most and the least side's table allows over the
 * splits of s between its members that respect the floors (V_INF / -V_INF where none does). */
static void side_range(const Ctx *c, int side, int r, const Floors *f, int32_t *best, int32_t *worst) {
    int a = c->taken[side], b = c->taken[side + 2], fa = f->seat[side], fb = f->seat[side + 2];
    for (int s = 0; s <= r; s++) {
        int32_t hi = -V_INF, lo = V_INF;
        for (int x = fa; x <= s - fb; x++) {
            int32_t v = c->tab[side][a + x][b + s - x];
            if (v > hi) hi = v;
            if (v < lo) lo = v;
        }
        best[s] = hi;
        worst[s] = lo;
    }
}

/* The best and worst value the tables allow once the r remaining tricks are split in any way the
 * floors allow: `forced` bounds both, `cash` (the leader's side's) tightens the bound in that
 * side's favour (it can make sure of an outcome in that set, not the other side). */
static void payoff_bounds(const Ctx *c, int r, int leader, int32_t *low, int32_t *high) {
    Floors forced, cash;
    forced_floors(c, &forced);
    int own_floor = 0, side_floor = 0;
    int cashes = cash_floors(c, leader, &forced, &own_floor, &side_floor);
    int m = c->max_side, lead_max = (leader & 1) == m;
    /* the bounds depend only on the tricks taken and the floors: remembered by those (a small
     * direct-mapped cache; the same few floors recur through the whole search) */
    uint64_t key = (uint64_t)1 << 63 | (uint64_t)leader << 50 | (uint64_t)cashes << 49;
    for (int s = 0; s < 4; s++)
        key |= (uint64_t)c->taken[s] << (4 * s) | (uint64_t)forced.seat[s] << (16 + 4 * s);
    key |= (uint64_t)forced.side[0] << 32 | (uint64_t)forced.side[1] << 36;
    if (cashes) key |= (uint64_t)own_floor << 40 | (uint64_t)side_floor << 44;
    BoundsSlot *slot = &c->bounds[(key * 0x9E3779B97F4A7C15ULL) >> c->bounds_shift];
    if (slot->key == key) { *low = slot->low; *high = slot->high; return; }
    if (cashes) {
        cash = forced;
        cash.seat[leader] = own_floor;
        cash.side[leader & 1] = side_floor;
    }
    int o = 1 - m;
    int32_t best[2][SOLVER_TABLE], worst[2][SOLVER_TABLE], cbest[SOLVER_TABLE], cworst[SOLVER_TABLE];
    side_range(c, m, r, &forced, best[m], worst[m]);
    side_range(c, o, r, &forced, best[o], worst[o]);
    int32_t *lo_m = worst[m], *lo_o = worst[o];      /* the tables the low bound and high bound read */
    const Floors *fl = &forced, *fh = &forced;
    if (cashes && lead_max) { side_range(c, m, r, &cash, cbest, cworst); lo_m = cworst; fl = &cash; }
    else if (cashes) { side_range(c, o, r, &cash, cbest, cworst); lo_o = cworst; fh = &cash; }
    int32_t hi = -V_INF, lo = V_INF;
    for (int s = fh->side[m]; s <= r - fh->side[o]; s++) {
        if (best[m][s] == -V_INF || lo_o[r - s] == V_INF) continue;
        int32_t up = best[m][s] - lo_o[r - s];
        if (up > hi) hi = up;
    }
    for (int s = fl->side[m]; s <= r - fl->side[o]; s++) {
        if (lo_m[s] == V_INF || best[o][r - s] == -V_INF) continue;
        int32_t down = lo_m[s] - best[o][r - s];
        if (down < lo) lo = down;
    }
    *low = lo;
    *high = hi;
    slot->key = key;
    slot->low = lo;
    slot->high = hi;
}

static uint64_t legal_cards(const Ctx *c, int seat, int trick_len, int led) {
    uint64_t hand = c->hands[seat];
    int first = c->tricks_played == 0;
    if (trick_len) {
        uint64_t follow = hand & SUITMASK(led);
        if (follow) return follow;
        if (first && c->nsft && (hand & NONSPADES)) return hand & NONSPADES;
        return hand;
    }
    if (first && c->two_clubs && (hand & 1)) return 1;
    if (hand & NONSPADES) {
        int restricted = c->spades_lead != 1;
        if ((restricted && !(c->broken && c->spades_lead == 0)) || (first && c->nsft)) return hand & NONSPADES;
    }
    return hand;
}

/* The legal cards as one representative per class of equivalent cards (the class's lowest),
 * in play order: the best card first, then (leading) the killers, then by a cheap guess.
 * Returns the count. */
static int ordered_moves(const Ctx *c, int seat, int trick_len, int led, int win_card, int win_seat,
                         uint64_t trick_mask, int best, int *moves) {
    uint64_t legal = legal_cards(c, seat, trick_len, led);
    uint64_t live = c->hands[0] | c->hands[1] | c->hands[2] | c->hands[3] | trick_mask;
    uint64_t others = live & ~c->hands[seat];
    int scores[13], n = 0, prev = -1;
    /* live nils around the seat to act (a nil not yet broken): their play comes first */
    enum { NIL_ME = 1, NIL_PARTNER = 2, NIL_THEM = 4 };
    int nils = 0, partner_to_come = 0;
    uint64_t nil_hands = 0;     /* the opponents' live nils' cards */
    for (int k = 0; k < 4; k++) {
        int s2 = (seat + k) & 3;
        if (!c->nil[s2] || c->taken[s2]) continue;
        if (k == 0) nils |= NIL_ME;
        else if (k == 2) nils |= NIL_PARTNER;
        else { nils |= NIL_THEM; nil_hands |= c->hands[s2]; }
        if (k == 2 && trick_len && trick_len + k < 4) partner_to_come = 1;    /* plays after us, this trick */
    }
    while (legal) {
        int card = __builtin_ctzll(legal);
        legal &= legal - 1;
        if (prev >= 0 && prev / 13 == card / 13) {
            uint64_t between = (((uint64_t)1 << card) - 1) & ~(((uint64_t)2 << prev) - 1);
            if (!(between & others)) { prev = card; continue; }      /* touches the class below */
        }
        prev = card;
        int rank = card % 13, score;
        int wins = trick_len && beats(card, win_card), spade_off = card >= SPADE_FIRST && led != 3;
        if (trick_len == 0) {
            uint64_t above = SUITMASK(card / 13) & ~(((uint64_t)2 << card) - 1);
            if (nils & NIL_ME) score = -rank;                                   /* a nil leads low */
            else if (nils & NIL_THEM)                                       /* into a nil: low, its suits */
                score = -rank + (nil_hands & SUITMASK(card / 13) ? 13 : 0);
            else score = (above & others) ? -rank : 40 + rank + (card >= SPADE_FIRST ? 0 : 13);
        } else if (nils & NIL_ME) {
            score = wins ? -rank - 40 : 20 + rank + (spade_off ? 0 : 13);       /* the highest that loses */
        } else if ((nils & NIL_PARTNER) && win_seat == ((seat + 2) & 3)) {
            score = wins ? 60 - rank : -rank;                                  /* take it off the nil */
        } else if ((nils & NIL_PARTNER) && partner_to_come) {
            score = wins ? 40 + rank : -rank;                                  /* cover the nil to come */
        } else if ((nils & NIL_THEM) && (win_seat & 1) != (seat & 1) && c->nil[win_seat] &&
                   !c->taken[win_seat]) {
            score = wins ? -rank - 40 : -rank;                                 /* leave the nil winning */
        } else if ((win_seat & 1) == (seat & 1)) {
            score = -rank - (spade_off ? 20 : 0);          /* partner holds it: low */
        } else if (wins) {
            score = 60 - rank - (spade_off ? 14 : 0);     /* the cheapest winner */
        } else {
            score = -rank;
        }
        if (trick_len == 0) {
            const int *killers = c->killer[c->tricks_played][seat];
            if (card == killers[0] - 1) score = 900;
            else if (card == killers[1] - 1) score = 899;
        }
        if (card == best) score = 1000;
        int i = n++;
        while (i > 0 && scores[i - 1] < score) { scores[i] = scores[i - 1]; moves[i] = moves[i - 1]; i--; }
        scores[i] = score;
        moves[i] = card;
    }
    return n;
}

/* Whether side's counts (a, b) and (a2, b2) face the same payoff up to a constant over every
 * split of the r remaining tricks. */
static int same_future(const Ctx *c, int side, int r, int a, int b, int a2, int b2) {
    int32_t d = c->tab[side][a][b] - c->tab[side][a2][b2];
    for (int x = 0; x <= r; x++)
        for (int y = 0; x + y <= r; y++)
            if (c->tab[side][a + x][b + y] - c->tab[side][a2 + x][b2 + y] != d) return 0;
    return 1;
}

/* The class of side's tricks taken so far with r tricks left (see the file's comment); *base
 * receives the constant its payoff is measured from. */
static int taken_class(Ctx *c, int side, int r, int32_t *base) {
    int a = c->taken[side], b = c->taken[side + 2];
    *base = c->tab[side][a][b];
    int16_t *slot = &c->class_of[side][r][a][b];
    if (*slot >= 0) return *slot;
    uint64_t fingerprint = (uint64_t)r;
    for (int x = 0; x <= r; x++)
        for (int y = 0; x + y <= r; y++)
            fingerprint = mix64(fingerprint ^ (uint32_t)(c->tab[side][a + x][b + y] - *base));
    int n = c->n_classes[side][r];
    for (int i = 0; i < n; i++)
        if (c->classes[side][r][i].fingerprint == fingerprint &&
            same_future(c, side, r, a, b, c->classes[side][r][i].a, c->classes[side][r][i].b))
            return *slot = (int16_t)i;
    c->classes[side][r][n].fingerprint = fingerprint;
    c->classes[side][r][n].a = (uint8_t)a;
    c->classes[side][r][n].b = (uint8_t)b;
    c->n_classes[side][r] = n + 1;
    return *slot = (int16_t)n;
}

static int32_t search(Ctx *c, int seat, int trick_len, int led, int win_card, int win_seat, uint64_t trick_mask,
                      int32_t alpha, int32_t beta);

/* The last trick: every seat holds one card, so it plays itself. */
static int32_t last_trick(Ctx *c, int leader) {
    int win_seat = leader, win_card = __builtin_ctzll(c->hands[leader]);
    for (int i = 1; i < 4; i++) {
        int seat = (leader + i) & 3, card = __builtin_ctzll(c->hands[seat]);
        if (beats(card, win_card)) { win_card = card; win_seat = seat; }
    }
    c->taken[win_seat]++;
    int32_t v = terminal(c);
    c->taken[win_seat]--;
    return v;
}

/* Play `card` for `seat` and search on; the position is restored before returning. */
static int32_t play(Ctx *c, int seat, int card, int trick_len, int led, int win_card, int win_seat,
                    uint64_t trick_mask, int32_t alpha, int32_t beta) {
    uint64_t bit = (uint64_t)1 << card;
    int broken = c->broken;
    c->hands[seat] &= ~bit;
    if (card >= SPADE_FIRST) c->broken = 1;
    if (trick_len == 0) { led = card / 13; win_card = card; win_seat = seat; }
    else if (beats(card, win_card)) { win_card = card; win_seat = seat; }
    int32_t v;
    if (trick_len == 3) {
        c->taken[win_seat]++;
        c->tricks_played++;
        v = search(c, win_seat, 0, -1, -1, -1, 0, alpha, beta);
        c->tricks_played--;
        c->taken[win_seat]--;
    } else {
        v = search(c, (seat + 1) & 3, trick_len + 1, led, win_card, win_seat, trick_mask | bit, alpha, beta);
    }
    c->hands[seat] |= bit;
    c->broken = broken;
    return v;
}

static int32_t search(Ctx *c, int seat, int trick_len, int led, int win_card, int win_seat, uint64_t trick_mask,
                      int32_t alpha, int32_t beta) {
    c->nodes++;
    Entry *e = NULL, *bucket = NULL;
    uint32_t key = 0;
    int32_t base = 0;       /* the table's bounds are relative to this (taken_class) */
    int best_card = -1;
    uint64_t live = 0, packed[2];
    if (trick_len == 0) {
        int r = c->tph - c->tricks_played;
        if (r == 0) return terminal(c);
        if (r == 1) return last_trick(c, seat);
        int32_t base_max, base_min;
        int class_max = taken_class(c, c->max_side, r, &base_max), class_min = taken_class(c, 1 - c->max_side, r, &base_min);
        base = base_max - base_min;
        key = (uint32_t)seat | (uint32_t)c->broken << 2 | (uint32_t)class_max << 3 | (uint32_t)class_min << 11 |
              (uint32_t)1 << 31;
        live = c->hands[0] | c->hands[1] | c->hands[2] | c->hands[3];
        pack_position(c->hands, live, packed);
        uint64_t h = mix64(packed[0] ^ mix64(packed[1] ^ key));
        bucket = &c->tt[h & c->tt_mask & ~(uint64_t)1];      /* two ways: deepest kept, newest */
        __builtin_prefetch(bucket);          /* its line is fetched while the bounds are worked out */
        int32_t low, high;
        payoff_bounds(c, r, seat, &low, &high);
        if (low == high || high <= alpha) return high;
        if (low >= beta) return low;
        if (low > alpha) alpha = low;
        if (high < beta) beta = high;
        for (int way = 0; way < 2; way++)
            if (bucket[way].key == key && bucket[way].w[0] == packed[0] && bucket[way].w[1] == packed[1]) e = &bucket[way];
        if (e) {
            int32_t lower = e->lower == -V_INF ? -V_INF : e->lower + base;
            int32_t upper = e->upper == V_INF ? V_INF : e->upper + base;
            if (lower >= beta) return lower;
            if (upper <= alpha) return upper;
            if (lower == upper) return lower;
            if (lower > alpha) alpha = lower;
            if (upper < beta) beta = upper;
            best_card = expand_card(e->best, live);
        }
    }
    int32_t a0 = alpha, b0 = beta;
    int moves[13];
    int n = ordered_moves(c, seat, trick_len, led, win_card, win_seat, trick_mask, best_card, moves);
    int maximizing = (seat & 1) == c->max_side;
    int32_t best = maximizing ? -V_INF : V_INF;
    int chosen = -1;
    for (int i = 0; i < n; i++) {
        int32_t v = play(c, seat, moves[i], trick_len, led, win_card, win_seat, trick_mask, alpha, beta);
        if (maximizing) {
            if (v > best) { best = v; chosen = moves[i]; }
            if (best > alpha) alpha = best;
        } else {
            if (v < best) { best = v; chosen = moves[i]; }
            if (best < beta) beta = best;
        }
        if (alpha >= beta) {
            int *killers = c->killer[c->tricks_played][seat];
            if (killers[0] != moves[i] + 1) { killers[1] = killers[0]; killers[0] = moves[i] + 1; }
            break;
        }
    }
    if (bucket) {
        if (!e || e->key != key || e->w[0] != packed[0] || e->w[1] != packed[1]) {
            int r = c->tph - c->tricks_played;
            int deep = bucket[0].key ? packed_cards(bucket[0].w) : 0;
            e = deep <= 4 * r ? &bucket[0] : &bucket[1];
            e->w[0] = packed[0];
            e->w[1] = packed[1];
            e->key = key;
            e->lower = -V_INF;
            e->upper = V_INF;
        }
        int32_t relative = best - base;
        if (best <= a0) { if (relative < e->upper) e->upper = relative; }
        else if (best >= b0) { if (relative > e->lower) e->lower = relative; }
        else { e->lower = e->upper = relative; }
        e->best = reduce_card(chosen, live);
    }
    return best;
}

/* The table's memory, zeroed. A large one (whole hands: 64 MB) is mapped on its own and asked
 * for huge pages where the system offers them: every probe lands on a random line, and with
 * 4 KB pages each one also missed the address cache (10% of a whole hand's time). */
enum { HUGE_TABLE = 4 << 20 };
static Entry *table_alloc(size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (bytes >= HUGE_TABLE) {
        void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) return NULL;
        madvise(p, bytes, MADV_HUGEPAGE);       /* advice: refused, the table still works */
        return p;
    }
#endif
    return calloc(1, bytes);
}

static void table_free(Entry *tt, size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (bytes >= HUGE_TABLE) { munmap(tt, bytes); return; }
#endif
    (void)bytes;
    free(tt);
}

static int table_bits(int tricks_left) {
    static const int bits[14] = {4, 4, 6, 8, 9, 10, 12, 14, 16, 18, 19, 20, 21, 21};
    return bits[tricks_left < 0 ? 0 : tricks_left > 13 ? 13 : tricks_left];
}

/* Check the position and set up the context; the trick in progress goes to *trick_state. */
static int setup(Ctx *c, const SolverPosition *p, int *state) {
    /* tricks_per_hand: 13, or fewer in a short deck (its cards are the highest ranks of each suit) */
    if (!p || !p->tables || p->tricks_per_hand < 1 || p->tricks_per_hand > 13 || p->tricks_played < 0 ||
        p->tricks_played >= p->tricks_per_hand ||
        p->trick_len < 0 || p->trick_len > 3 || p->leader < 0 || p->leader > 3 || p->max_side < 0 ||
        p->max_side > 1 || p->spades_lead < 0 || p->spades_lead > 2)
        return SOLVER_ERR_ARGS;
    memset(c, 0, offsetof(Ctx, classes));
    int r = p->tricks_per_hand - p->tricks_played, total_taken = 0;
    uint64_t seen = 0, trick_mask = 0;
    for (int s = 0; s < 4; s++) {
        uint64_t hand = p->hands[s];
        if ((hand >> 52) || (hand & seen) || p->taken[s] < 0 || p->taken[s] > p->tricks_per_hand) return SOLVER_ERR_ARGS;
        seen |= hand;
        c->hands[s] = hand;
        c->taken[s] = p->taken[s];
        total_taken += p->taken[s];
        int played_now = ((s - p->leader) & 3) < p->trick_len;
        if (__builtin_popcountll(hand) != r - played_now) return SOLVER_ERR_ARGS;
    }
    if (total_taken != p->tricks_played) return SOLVER_ERR_ARGS;
    int led = -1, win_card = -1, win_seat = -1;
    for (int i = 0; i < p->trick_len; i++) {
        int card = p->trick[i], seat = (p->leader + i) & 3;
        if (card < 0 || card > 51 || ((seen | trick_mask) >> card & 1)) return SOLVER_ERR_ARGS;
        trick_mask |= (uint64_t)1 << card;
        if (i == 0) { led = card / 13; win_card = card; win_seat = seat; }
        else if (beats(card, win_card)) { win_card = card; win_seat = seat; }
    }
    c->broken = p->broken != 0;
    c->tricks_played = p->tricks_played;
    c->tph = p->tricks_per_hand;
    c->spades_lead = p->spades_lead;
    c->nsft = p->no_spades_first_trick != 0;
    c->two_clubs = p->two_of_clubs_leads != 0;
    c->max_side = p->max_side;
    for (int s = 0; s < 4; s++) {
        /* the side's payoff with this seat's first trick against its partner's instead: the
         * side's total is the same either way, so only a nil tells them apart by much */
        int side = s & 1, first = s == side, a = p->taken[side], b = p->taken[side + 2];
        if (p->taken[s] || a + b + 1 >= SOLVER_TABLE) continue;
        int32_t mine = first ? p->tables[side][a + 1][b] : p->tables[side][a][b + 1];
        int32_t theirs = first ? p->tables[side][a][b + 1] : p->tables[side][a + 1][b];
        c->nil[s] = mine + 40 < theirs;
    }
    for (int side = 0; side < 2; side++) {
        for (int a = 0; a < SOLVER_TABLE; a++)
            for (int b = 0; b < SOLVER_TABLE; b++) {
                int32_t v = p->tables[side][a][b];
                if (v < -(V_INF / 4) || v > V_INF / 4) return SOLVER_ERR_ARGS;
                c->tab[side][a][b] = v;
            }
    }
    memset(c->class_of, 0xFF, sizeof c->class_of);
    size_t entries = (size_t)1 << table_bits(r);
    int bounds_bits = table_bits(r) < BOUNDS_BITS ? table_bits(r) : BOUNDS_BITS;
    c->bounds_shift = 64 - bounds_bits;
    c->tt_bytes = entries * sizeof(Entry) + (sizeof(BoundsSlot) << bounds_bits);
    if (!(c->tt = table_alloc(c->tt_bytes))) return SOLVER_ERR_MEMORY;
    c->tt_mask = entries - 1;
    c->bounds = (BoundsSlot *)(c->tt + entries);
    state[0] = (p->leader + p->trick_len) & 3;
    state[1] = p->trick_len;
    state[2] = led;
    state[3] = win_card;
    state[4] = win_seat;
    memcpy(&state[5], &trick_mask, sizeof trick_mask);
    return SOLVER_OK;
}

/* Every value the tables allow from here (each split of the remaining tricks), sorted, distinct. */
static int reachable_values(const Ctx *c, int32_t *out) {
    int r = c->tph - c->tricks_played, n = 0, m = c->max_side, o = 1 - m;
    for (int x0 = 0; x0 <= r; x0++)
        for (int x1 = 0; x0 + x1 <= r; x1++)
            for (int x2 = 0; x0 + x1 + x2 <= r; x2++) {
                int t[4] = {c->taken[0] + x0, c->taken[1] + x1, c->taken[2] + x2,
                            c->taken[3] + r - x0 - x1 - x2};
                int32_t v = c->tab[m][t[m]][t[m + 2]] - c->tab[o][t[o]][t[o + 2]];
                int i = n;
                while (i > 0 && out[i - 1] > v) i--;
                if (i > 0 && out[i - 1] == v) continue;
                memmove(out + i + 1, out + i, (size_t)(n - i) * sizeof *out);
                out[i] = v;
                n++;
            }
    return n;
}

/* Whether the payoff is a nondecreasing function g of the max side's tricks alone, over every
 * split of the tricks left (a hand without a live nil, where no side can reach a bag penalty
 * or the bags are not priced: most game hands from the first lead). Then the position's value
 * is g of the tricks the max side takes under optimal play for tricks (max and min commute
 * with a nondecreasing g), so the tables become trick counts, which the search settles in
 * fewer and cheaper tests, and the counts map back through g. g[x]: the payoff when the max
 * side takes x of the tricks left. */
static int to_trick_counts(Ctx *c, int32_t *g) {
    int r = c->tph - c->tricks_played, m = c->max_side, o = 1 - m;
    int seen[SOLVER_TABLE] = {0};
    for (int x0 = 0; x0 <= r; x0++)
        for (int x1 = 0; x0 + x1 <= r; x1++)
            for (int x2 = 0; x0 + x1 + x2 <= r; x2++) {
                int x[4] = {x0, x1, x2, r - x0 - x1 - x2}, t[4];
                for (int s = 0; s < 4; s++) t[s] = c->taken[s] + x[s];
                int32_t v = c->tab[m][t[m]][t[m + 2]] - c->tab[o][t[o]][t[o + 2]];
                int mine = x[m] + x[m + 2];
                if (!seen[mine]) { seen[mine] = 1; g[mine] = v; }
                else if (g[mine] != v) return 0;
            }
    for (int x = 1; x <= r; x++)
        if (g[x] < g[x - 1]) return 0;
    for (int a = 0; a < SOLVER_TABLE; a++)
        for (int b = 0; b < SOLVER_TABLE; b++) {
            c->tab[m][a][b] = a + b;
            c->tab[o][a][b] = 0;
        }
    return 1;
}

/* The exact value by null-window tests ("is it at least t?") over the reachable values: each
 * test cuts far more than one wide window, and the table keeps what earlier tests proved.
 * `card` >= 0: the value after the seat to act plays it; -1: the position's own value.
 * guesses[0..n_guesses): indices into vals of likely values (siblings' values, most likely
 * first): while one is still possible, "at least it?" then "more than it?" settle it; else the
 * tests halve the range. */
static int32_t exact_value(Ctx *c, const int *st, uint64_t trick_mask, int card, const int32_t *vals, int n,
                           const int *guesses, int n_guesses) {
    int lo = 0, hi = n - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        for (int i = 0; i < n_guesses; i++) {
            int g = guesses[i];
            if (g >= lo && g <= hi) { mid = g > lo ? g : lo + 1; break; }
        }
        int32_t t = vals[mid], v;
        if (card >= 0) v = play(c, st[0], card, st[1], st[2], st[3], st[4], trick_mask, t - 1, t);
        else v = search(c, st[0], st[1], st[2], st[3], st[4], trick_mask, t - 1, t);
        if (v >= t) { while (lo < hi && vals[lo] < v) lo++; if (vals[lo] < t) lo = mid; }
        else { while (hi > lo && vals[hi] > v) hi--; if (vals[hi] >= t) hi = mid - 1; }
    }
    return vals[lo];
}

int spades_solver_position_value(const SolverPosition *p, int32_t *value, int64_t *nodes) {
    Ctx *c = malloc(sizeof *c);
    int st[8];
    if (!c) return SOLVER_ERR_MEMORY;
    int status = setup(c, p, st);
    if (status) { free(c); return status; }
    uint64_t trick_mask;
    memcpy(&trick_mask, &st[5], sizeof trick_mask);
    int32_t vals[600], g[SOLVER_TABLE];
    int counts = to_trick_counts(c, g), own = c->taken[c->max_side] + c->taken[c->max_side + 2];
    int n = reachable_values(c, vals);
    *value = exact_value(c, st, trick_mask, -1, vals, n, NULL, 0);
    if (counts) *value = g[*value - own];
    if (nodes) *nodes += c->nodes;
    table_free(c->tt, c->tt_bytes);
    free(c);
    return SOLVER_OK;
}

int spades_solver_card_values(const SolverPosition *p, const int *cards, int n_cards, int32_t *values,
                              int64_t *nodes) {
    int st[8];
    if (!cards || !values || n_cards < 0 || n_cards > 13) return SOLVER_ERR_ARGS;
    Ctx *c = malloc(sizeof *c);
    if (!c) return SOLVER_ERR_MEMORY;
    int status = setup(c, p, st);
    if (status) { free(c); return status; }
    uint64_t trick_mask;
    memcpy(&trick_mask, &st[5], sizeof trick_mask);
    int seat = st[0];
    uint64_t legal = legal_cards(c, seat, st[1], st[2]);
    uint64_t others = (c->hands[0] | c->hands[1] | c->hands[2] | c->hands[3] | trick_mask) & ~c->hands[seat];
    int32_t vals[600], payoff_of[SOLVER_TABLE];
    int counts = to_trick_counts(c, payoff_of), own = c->taken[c->max_side] + c->taken[c->max_side + 2];
    int n_vals = reachable_values(c, vals);
    int reps[13], guesses[13], n_guesses = 0;     /* guesses: the values found so far, the latest first */
    int32_t rep_values[13];
    int n_reps = 0;
    for (int i = 0; i < n_cards; i++) {
        int card = cards[i];
        if (card < 0 || card > 51 || !(legal >> card & 1)) { status = SOLVER_ERR_ILLEGAL; break; }
        /* the class's lowest card: walk down while no other live card lies between */
        int low = card;
        for (int below = card - 1; below >= 13 * (card / 13); below--) {
            if (others >> below & 1) break;
            if (c->hands[seat] >> below & 1) low = below;
        }
        int j = 0;
        while (j < n_reps && reps[j] != low) j++;
        if (j == n_reps) {
            reps[n_reps] = low;
            int32_t v = exact_value(c, st, trick_mask, low, vals, n_vals, guesses, n_guesses);
            rep_values[n_reps++] = v;
            int g = 0, k = 0;
            while (vals[g] != v) g++;
            while (k < n_guesses && guesses[k] != g) k++;
            if (k == n_guesses) n_guesses++;
            memmove(guesses + 1, guesses, (size_t)k * sizeof *guesses);       /* g moves to the front */
            guesses[0] = g;
        }
        values[i] = counts ? payoff_of[rep_values[j] - own] : rep_values[j];
    }
    if (nodes) *nodes += c->nodes;
    table_free(c->tt, c->tt_bytes);
    free(c);
    return status;
}

/* The ctypes entry point (spades_env/solver.py): a position as int64 fields in SOLVE_FIELDS
 * order, the tables as 2 x 14 x 14 int64, and the cards to value. stats[0] receives the nodes
 * searched. Returns SOLVER_OK or a SOLVER_ERR_* code. */
enum { F_HANDS = 0, F_TRICK_LEN = 4, F_TRICK = 5, F_LEADER = 8, F_BROKEN = 9, F_TRICKS_PLAYED = 10,
       F_SPADES_LEAD = 11, F_NSFT = 12, F_TWO_CLUBS = 13, F_TAKEN = 14, F_MAX_SIDE = 18, F_TRICKS_PER_HAND = 19,
       F_COUNT = 20 };

int spades_solver_fields(void) { return F_COUNT; }

i64 spades_solve_cards(const i64 *fields, const i64 *tables, const i64 *cards, i64 n_cards, i64 *values, i64 *stats) {
    if (!fields || !tables || !cards || !values || n_cards < 0 || n_cards > 13) return SOLVER_ERR_ARGS;
    int32_t tab[2][SOLVER_TABLE][SOLVER_TABLE];
    for (int i = 0; i < 2 * SOLVER_TABLE * SOLVER_TABLE; i++) {
        if (tables[i] < -(V_INF / 4) || tables[i] > V_INF / 4) return SOLVER_ERR_ARGS;
        (&tab[0][0][0])[i] = (int32_t)tables[i];
    }
    SolverPosition p;
    memset(&p, 0, sizeof p);
    for (int s = 0; s < 4; s++) {
        p.hands[s] = (uint64_t)fields[F_HANDS + s];
        p.taken[s] = (int)fields[F_TAKEN + s];
    }
    p.trick_len = (int)fields[F_TRICK_LEN];
    if (p.trick_len < 0 || p.trick_len > 3) return SOLVER_ERR_ARGS;
    for (int i = 0; i < 3; i++) p.trick[i] = (int)fields[F_TRICK + i];
    p.leader = (int)fields[F_LEADER];
    p.broken = (int)fields[F_BROKEN];
    p.tricks_played = (int)fields[F_TRICKS_PLAYED];
    p.tricks_per_hand = (int)fields[F_TRICKS_PER_HAND];
    p.spades_lead = (int)fields[F_SPADES_LEAD];
    p.no_spades_first_trick = (int)fields[F_NSFT];
    p.two_of_clubs_leads = (int)fields[F_TWO_CLUBS];
    p.max_side = (int)fields[F_MAX_SIDE];
    p.tables = (const int32_t (*)[SOLVER_TABLE][SOLVER_TABLE])tab;
    int chosen[13];
    int32_t out[13];
    for (i64 i = 0; i < n_cards; i++) chosen[i] = (int)cards[i];
    int64_t nodes = 0;
    int status = n_cards ? spades_solver_card_values(&p, chosen, (int)n_cards, out, &nodes)
                         : spades_solver_position_value(&p, out, &nodes);
    if (status) return status;
    for (i64 i = 0; i < (n_cards ? n_cards : 1); i++) values[i] = out[i];
    if (stats) stats[0] = nodes;
    return SOLVER_OK;
}
