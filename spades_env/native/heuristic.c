/* The rule-based heuristic player in C (see heuristic.h): agents/heuristic_decisions.py, function by
 * function, with the same names, the same order of floating-point operations and the same
 * tie-breaks, so that every decision is the reference's. Python's max/min keep the first of
 * equal values; py_max/py_min below do the same. Compiled with -std=c99 (no contraction of
 * a * b + c into one rounding), and exp/pow from the same libm as Python's.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "heuristic.h"

enum { NUM_CARDS = 52, SPADES = 3, SPADE_FIRST = 39 };
enum { PH_BLIND = 0, PH_BIDDING = 1, PH_PASSING = 2, PH_PLAY = 3 };
enum { BID_BASE = 52, BLIND_NIL = 66, LOOK = 67, MESSAGE_BASE = 68, MAX_ACTIONS = 68 + 16 };
enum { ACE = 12, KING = 11, QUEEN = 10, JACK = 9, TEN = 8 };

#define ALL_CARDS ((uint64_t)0xFFFFFFFFFFFFFULL)   /* 52 bits */
#define LEGAL_HIGH_BITS ((uint64_t)0xFFFFF)          /* actions 64..83 in legal[1] */
#define SUIT_MASK(s) ((uint64_t)0x1FFF << (13 * (s)))
#define SPADE_MASK SUIT_MASK(SPADES)

static const double BID_MARGIN = 0.5, NIL_MAX_ESTIMATE = 3.0, NIL_EDGE = 5.0, RUFF_RISK_LIMIT = 0.3;
static const int UNCLAIMED_TRICKS = 3, BLIND_NIL_FAR_BEHIND = 200, BLIND_NIL_CLOSE_TO_TARGET = 100;
/* A short deck's count scaled to its tricks (heuristic_decisions.py SHORT_DECK_SCALE, SHORT_DECK_SHIFT). */
static const double SHORT_DECK_SCALE = 0.89, SHORT_DECK_SHIFT = -0.29;
/* Conventions (heuristic_decisions.py's BID_ADJUSTMENT, EAGER_NIL_*, SIGNAL_HIGH_RANK). */
static const int BID_ADJUSTMENT[BIDDING_VALUES] = {0, -1, 1};
static const double EAGER_NIL_MAX_ESTIMATE = 4.0, EAGER_NIL_EDGE = -20.0;
static const int SIGNAL_HIGH_RANK = 6;
static const int32_t STANDARD_CONVENTIONS[HEUR_CONV_COUNT] = {0, 0, 0, 0, 0};
static const int32_t CONVENTION_VALUES[HEUR_CONV_COUNT] = {BIDDING_VALUES, NIL_VALUES, COVER_VALUES, DISCARDS_VALUES,
                                                           LEADS_VALUES};

static inline int popcount(uint64_t x) { return __builtin_popcountll(x); }
static inline int lowest_bit(uint64_t x) { return __builtin_ctzll(x); }
static inline int highest_bit(uint64_t x) { return 63 - __builtin_clzll(x); }
static inline int suit_of(int c) { return c / 13; }
static inline uint64_t above(int c) { return SUIT_MASK(c / 13) & ~((((uint64_t)2) << c) - 1); }
static inline uint64_t below(int c) { return SUIT_MASK(c / 13) & ((((uint64_t)1) << c) - 1); }
static inline double py_max(double a, double b) { return b > a ? b : a; }
static inline double py_min(double a, double b) { return b < a ? b : a; }
static inline int has_action(const uint64_t legal[2], int a) { return (int)((legal[a >> 6] >> (a & 63)) & 1); }

/* ------------------------------------------------------------------ bidding */
uint64_t spades_heuristic_deck(int players, int tricks_per_hand) {
    if (players == 3) return ALL_CARDS - 1;
    uint64_t suit = (((uint64_t)1 << tricks_per_hand) - 1) << (13 - tricks_per_hand), deck = 0;
    for (int s = 0; s < 4; s++) deck |= suit << (13 * s);
    return deck;
}

static double estimate_tricks(uint64_t hand, int players, int tricks_per_hand) {
    double total = -0.7, shortness = 0.0;
    for (int suit = 0; suit < 3; suit++) {
        uint64_t s = (hand >> (13 * suit)) & 0x1FFF;
        int length = popcount(s);
        shortness += length < 3 ? (length == 0 ? 2.0 : (length == 1 ? 1.0 : 0.4)) : 0.0;
        int has_ace = (int)(s >> ACE & 1), has_king = (int)(s >> KING & 1);
        if (has_ace) total += length <= 5 ? 1.0 : 0.85;
        if (has_king) total += has_ace ? 0.67 : (length >= 2 ? 0.73 : 0.2);
        if ((s >> QUEEN & 1) && length >= 3) total += 0.2;
    }
    uint64_t sp = (hand >> (13 * SPADES)) & 0x1FFF;
    int count = popcount(sp), spare = 0, j = 0;
    for (int rank = 12; rank >= 0; rank--) {
        if (!(sp >> rank & 1)) continue;
        int higher_missing = (12 - rank) - j, guards = count - 1 - j;
        if (higher_missing <= 0) total += 0.77;
        else if (higher_missing == 1 && guards >= 1) total += 0.6;
        else if (higher_missing == 2 && guards >= 2) total += 0.4;
        else spare += 1;
        j++;
    }
    double ruffs = py_min((double)spare, shortness);
    double long_trumps = py_max(0.0, py_min((double)spare - ruffs, (double)count - 3.0));
    total += 0.51 * (double)count + 0.36 * ruffs + 0.28 * long_trumps;
    if (players == 3) total = 1.08 * total + 0.7;
    else if (tricks_per_hand < 13) total = py_min(SHORT_DECK_SCALE * total + SHORT_DECK_SHIFT, (double)tricks_per_hand);
    return py_max(0.0, total);
}

static double nil_success_chance(uint64_t hand, int partner_bid, int players, int partnership) {
    uint64_t sp = (hand >> (13 * SPADES)) & 0x1FFF;
    if (sp >> QUEEN) return 0.0;                          /* a spade queen, king or ace */
    double z = 1.68;
    z -= 0.46 * (double)(sp >> JACK & 1) + 0.33 * (double)(sp >> TEN & 1) + 0.21 * (double)(sp >> 7 & 1);
    int len = popcount(sp);
    z -= 0.63 * (double)(len - 2 > 0 ? len - 2 : 0);
    if (sp && lowest_bit(sp) >= 6) z -= 0.31;
    for (int suit = 0; suit < 3; suit++) {
        uint64_t s = (hand >> (13 * suit)) & 0x1FFF;
        if (!s) continue;
        int small = popcount(s & 0x3F);                   /* ranks 0..5 */
        for (int rank = 0; rank < 13; rank++) {
            if (!(s >> rank & 1)) continue;
            if (rank == ACE) { int k = 3 - small; z -= 0.29 * (double)(1 + (k > 0 ? k : 0)); }
            else if (rank == KING) { int k = 2 - small; z -= 0.53 * (double)(k > 0 ? k : 0); }
            else if (rank == QUEEN) { int k = 2 - small; z -= 0.31 * (double)(k > 0 ? k : 0); }
            else if (rank == JACK) { int k = 1 - small; z -= 0.42 * (double)(k > 0 ? k : 0); }
            else if (rank == TEN) { int k = 1 - small; z -= 0.31 * (double)(k > 0 ? k : 0); }
        }
        int lowest = lowest_bit(s), length = popcount(s);
        z -= 0.12 * (double)(lowest - 2 > 0 ? lowest - 2 : 0);
        z += 0.18 * (double)(length - 4 > 0 ? length - 4 : 0);
    }
    if (partner_bid > 0) z += 0.07 * (double)(partner_bid - 2);
    if (players == 3) z -= 3.15;
    else if (!partnership) z -= 1.35;
    return 1.0 / (1.0 + exp(-z));
}

static int prefers_nil(uint64_t hand, double estimate, int partner_bid, int players, int partnership, int nil) {
    if (nil == NIL_NEVER) return 0;
    int eager = nil == NIL_EAGER;
    if (estimate > (eager ? EAGER_NIL_MAX_ESTIMATE : NIL_MAX_ESTIMATE)) return 0;
    double chance = nil_success_chance(hand, partner_bid, players, partnership);
    return 200.0 * chance - 100.0 - 10.0 * py_max(1.0, estimate) >= (eager ? EAGER_NIL_EDGE : NIL_EDGE);
}

static int choose_bid(const SeatView *v, const uint64_t legal[2], const int32_t *conv) {
    double estimate = estimate_tricks(v->hand, v->players, v->tricks_per_hand);
    int partner_bid = v->partnerships ? v->bids[2] : -1;       /* -1: none (or no partner) */
    if (v->partnerships && partner_bid == 0) estimate += v->blind[2] ? 1.0 : -0.3;
    if (has_action(legal, BID_BASE) && partner_bid != 0
            && prefers_nil(v->hand, estimate, partner_bid, v->players, v->partnerships, conv[HEUR_CONV_NIL]))
        return BID_BASE;
    long desired = (long)floor(estimate + 0.5 - BID_MARGIN) + BID_ADJUSTMENT[conv[HEUR_CONV_BIDDING]];
    if (desired < 1) desired = 1;
    int all_bid = 1, others = 0;
    for (int s = 1; s < v->players; s++) {
        if (v->bids[s] < 0) all_bid = 0;
        else others += v->bids[s];
    }
    if (all_bid && others + desired <= v->tricks_per_hand - UNCLAIMED_TRICKS) desired += 1;
    int best = -1;
    long best_distance = 0, best_above = 0;
    for (int bid = 1; bid < 14; bid++) {
        if (!has_action(legal, BID_BASE + bid)) continue;
        long distance = labs(bid - desired), is_above = bid > desired;
        if (best < 0 || distance < best_distance || (distance == best_distance && is_above < best_above)) {
            best = bid; best_distance = distance; best_above = is_above;
        }
    }
    return best < 0 ? BID_BASE : BID_BASE + best;
}

static int choose_blind_nil(const SeatView *v, const uint64_t legal[2], const int32_t *conv) {
    if (!has_action(legal, BLIND_NIL)) return LOOK;
    if (conv[HEUR_CONV_NIL] == NIL_NEVER) return LOOK;
    if (v->partnerships && v->bids[2] == 0) return LOOK;
    int64_t own = v->scores[0], other = v->scores[1], deficit = other - own;
    int far_behind = deficit >= BLIND_NIL_FAR_BEHIND;
    int about_to_lose = deficit >= 100 && other >= v->target_score - BLIND_NIL_CLOSE_TO_TARGET;
    return (far_behind || about_to_lose) ? BLIND_NIL : LOOK;
}

/* ------------------------------------------------------------------ passing */
static double danger_for_nil(int card, uint64_t hand) {
    int rank = card % 13;
    if (card >= SPADE_FIRST) return rank + 5.0;
    int b = popcount(hand & below(card));
    return rank - 1.5 * (double)(b < 3 ? b : 3);
}

/* The card of `cards` with the largest (danger, card). */
static int most_dangerous(uint64_t cards, uint64_t hand) {
    int best = -1;
    double best_danger = 0.0;
    for (uint64_t m = cards; m; m &= m - 1) {
        int c = lowest_bit(m);
        double d = danger_for_nil(c, hand);
        if (best < 0 || d > best_danger || (d == best_danger && c > best)) { best = c; best_danger = d; }
    }
    return best;
}

static int choose_pass(const SeatView *v, const uint64_t legal[2]) {
    uint64_t cards = legal[0] & ALL_CARDS, hand = v->hand;
    if (v->blind[0]) return most_dangerous(cards, hand);
    int best = -1, best_low = 0, best_len = 0;
    for (uint64_t m = cards; m; m &= m - 1) {
        int c = lowest_bit(m);
        int low = c % 13 + (c >= SPADE_FIRST ? 4 : 0), len = popcount(hand & SUIT_MASK(suit_of(c)));
        if (best < 0 || low < best_low || (low == best_low && len < best_len)) {
            best = c;
            best_low = low;
            best_len = len;
        }
    }
    return best;
}

/* ------------------------------------------------------------------ play: what the seat knows */
typedef struct {
    int n, partner;             /* partner: 2, or -1 without one */
    uint64_t hand, legal, unseen;
    int trick_len, trick_seat[4], trick_card[4];
    int led, win_card, win_seat;        /* -1 when no trick has begun */
    int after_count;            /* seats 1 .. after_count play after us */
    int opps_after[4], n_opps_after;
    const int32_t *voids, *bids, *tricks;
    int hand_sizes[4], remaining;
    uint64_t played[4];         /* per relative seat, this hand */
    const int32_t *conv;        /* the conventions (HEUR_CONV_COUNT values) */
} Table;

static inline int void_in(const Table *t, int seat, int suit) { return (t->voids[seat] >> suit) & 1; }

static void table_init(Table *t, const SeatView *v, uint64_t legal_cards, const int32_t *conv) {
    int n = t->n = v->players;
    t->conv = conv;
    for (int s = 0; s < 4; s++) t->played[s] = s < n ? v->played[s] : 0;
    t->hand = v->hand;
    t->legal = legal_cards & ALL_CARDS;
    uint64_t seen = v->hand;
    for (int s = 0; s < n; s++) seen |= v->played[s];
    uint64_t unseen = v->deck & ~seen;
    t->partner = (v->partnerships && n == 4) ? 2 : -1;
    if (t->partner >= 0) unseen &= ~v->passed;
    t->unseen = unseen;
    t->trick_len = v->trick_len;
    int sum = 0;
    for (int s = 0; s < n; s++) sum += v->tricks_taken[s];
    t->remaining = v->tricks_per_hand - sum;
    t->bids = v->bids; t->tricks = v->tricks_taken; t->voids = v->voids;
    int played_now[4] = {0, 0, 0, 0};
    for (int k = 0; k < v->trick_len; k++) {
        t->trick_seat[k] = v->trick_seat[k]; t->trick_card[k] = v->trick_card[k];
        played_now[v->trick_seat[k]] = 1;
    }
    if (v->trick_len) {
        t->led = v->trick_card[0] / 13;
        int win_seat = v->trick_seat[0], win_card = v->trick_card[0];
        for (int k = 0; k < v->trick_len; k++) {
            int c = v->trick_card[k];
            if ((c / 13 == win_card / 13 && c > win_card) || (c >= SPADE_FIRST && win_card < SPADE_FIRST)) {
                win_seat = v->trick_seat[k]; win_card = c;
            }
        }
        t->win_seat = win_seat; t->win_card = win_card;
    } else {
        t->led = t->win_seat = t->win_card = -1;
    }
    t->after_count = n - v->trick_len - 1;
    t->n_opps_after = 0;
    for (int s = 1; s <= t->after_count; s++)
        if (s != t->partner) t->opps_after[t->n_opps_after++] = s;
    for (int s = 0; s < n; s++) t->hand_sizes[s] = t->remaining - played_now[s];
}

static double ruff_chance(const Table *t, int suit, const int *seats, int count) {
    uint64_t unseen = t->unseen;
    if (!(unseen & SPADE_MASK)) return 0.0;
    int in_suit = popcount(unseen & SUIT_MASK(suit)), total = popcount(unseen);
    double none_void = 1.0;
    for (int k = 0; k < count; k++) {
        int s = seats[k];
        if (void_in(t, s, SPADES)) continue;
        if (void_in(t, s, suit)) return 1.0;
        double share = total ? (double)t->hand_sizes[s] / (double)total : 1.0;
        double p_void = share < 1.0 ? pow(1.0 - share, (double)in_suit) : (in_suit ? 0.0 : 1.0);
        none_void *= 1.0 - p_void;
    }
    return 1.0 - none_void;
}

static int holds(const Table *t, int card) {
    if (!t->n_opps_after) return 1;
    int suit = card / 13, led = t->led < 0 ? suit : t->led;
    uint64_t higher = t->unseen & above(card);
    if (suit == led) {
        if (higher)
            for (int k = 0; k < t->n_opps_after; k++)
                if (!void_in(t, t->opps_after[k], led)) return 0;
        if (suit != SPADES && ruff_chance(t, suit, t->opps_after, t->n_opps_after) >= RUFF_RISK_LIMIT) return 0;
        return 1;
    }
    if (!higher) return 1;
    for (int k = 0; k < t->n_opps_after; k++) {
        int o = t->opps_after[k];
        if (!void_in(t, o, SPADES) && (void_in(t, o, led) || ruff_chance(t, led, &o, 1) >= RUFF_RISK_LIMIT)) return 0;
    }
    return 1;
}

static inline int is_master(const Table *t, int card) { return !(t->unseen & above(card)); }
static inline int intact_nil(const Table *t, int seat) { return t->bids[seat] == 0 && t->tricks[seat] == 0; }

static int wants_tricks(const Table *t) {
    int contract = 0, taken = 0;
    for (int s = 0; s < 4; s += 2) {
        if (s == 2 && t->partner < 0) break;
        if (t->bids[s] > 0) { contract += t->bids[s]; taken += t->tricks[s]; }
    }
    if (taken < contract) return 1;
    if (t->partner < 0) return 0;
    int opp_contract = 0, opp_taken = 0;
    for (int s = 1; s < 4; s += 2)
        if (t->bids[s] > 0) { opp_contract += t->bids[s]; opp_taken += t->tricks[s]; }
    int opp_need = opp_contract - opp_taken;
    if (opp_need <= 0) return 0;
    int to_set = t->remaining - opp_need + 1, masters = 0;
    for (uint64_t m = t->hand; m; m &= m - 1)
        masters += is_master(t, lowest_bit(m));
    return to_set <= masters + 1;
}

/* ------------------------------------------------------------------ play: choices */
static int plain_discard(const Table *t, uint64_t side) {
    int best = -1, best_master = 0;
    double best_key = 0.0;
    for (uint64_t m = side; m; m &= m - 1) {
        int c = lowest_bit(m), master = is_master(t, c);
        double key = c % 13 + 0.5 * (double)popcount(t->hand & SUIT_MASK(suit_of(c)));
        if (best < 0 || master < best_master || (master == best_master && key < best_key)) {
            best = c; best_master = master; best_key = key;
        }
    }
    return best;
}

/* The cards of `cards` whose discard asks for their suit (heuristic_decisions.py _is_signal). */
static uint64_t signal_cards(const Table *t, uint64_t cards, int high_asks) {
    uint64_t out = 0;
    for (uint64_t m = cards; m; m &= m - 1) {
        int c = lowest_bit(m);
        if (!is_master(t, c) && (c % 13 >= SIGNAL_HIGH_RANK) == high_asks) out |= (uint64_t)1 << c;
    }
    return out;
}

static int signal_discard(const Table *t, uint64_t side, int high_asks) {
    int best_suit = -1, best_length = 0;
    for (int suit = 0; suit < 3; suit++) {
        uint64_t held = t->hand & SUIT_MASK(suit);
        if (!held || !is_master(t, highest_bit(held))) continue;
        if (!signal_cards(t, side & SUIT_MASK(suit), high_asks)) continue;
        int length = popcount(held);
        if (length > best_length) { best_suit = suit; best_length = length; }
    }
    if (best_suit >= 0) return lowest_bit(signal_cards(t, side & SUIT_MASK(best_suit), high_asks));
    uint64_t quiet = signal_cards(t, side, !high_asks);          /* non-masters that ask for nothing */
    return plain_discard(t, quiet ? quiet : side);
}

static int discard_low(const Table *t, uint64_t cards) {
    uint64_t side = cards & ~SPADE_MASK;
    if (!side) return lowest_bit(cards);
    int discards = t->conv[HEUR_CONV_DISCARDS];
    if (discards == DISCARDS_NONE) {
        int best = -1;
        for (uint64_t m = side; m; m &= m - 1) {
            int c = lowest_bit(m);
            if (best < 0 || c % 13 < best % 13) best = c;
        }
        return best;
    }
    if (discards != DISCARDS_STANDARD) return signal_discard(t, side, discards == DISCARDS_HIGH_ASKS);
    return plain_discard(t, side);
}

static int throw_low(const Table *t, uint64_t cards) {
    int first = lowest_bit(cards);
    if (t->led >= 0 && first / 13 == t->led) return first;
    return discard_low(t, cards);
}

static int duck(const Table *t, uint64_t winners, uint64_t losers) {
    if (losers) return most_dangerous(losers, t->hand);
    if (!t->after_count) return highest_bit(winners);
    return lowest_bit(winners);
}

static int lead_low(const Table *t, uint64_t cards) {
    int best = -1, bk0 = 0, bk1 = 0, bk2 = 0, bk3 = 0;
    for (uint64_t m = cards; m; m &= m - 1) {
        int c = lowest_bit(m);
        int higher = popcount(t->unseen & above(c)), lower = popcount(t->unseen & below(c));
        int k0 = higher == 0, k1 = lower, k2 = c >= SPADE_FIRST, k3 = -higher;
        if (best < 0 || k0 < bk0 || (k0 == bk0 && (k1 < bk1 || (k1 == bk1 && (k2 < bk2 || (k2 == bk2 && k3 < bk3)))))) {
            best = c; bk0 = k0; bk1 = k1; bk2 = k2; bk3 = k3;
        }
    }
    return best;
}

static int lead_high(const Table *t, uint64_t cards) {
    int best = -1, bk0 = 0, bk1 = 0, bk2 = 0, bk3 = 0;
    for (uint64_t m = cards; m; m &= m - 1) {
        int c = lowest_bit(m), master = is_master(t, c);
        int k0 = master && c < SPADE_FIRST, k1 = master, k2 = c % 13, k3 = -c;
        if (best < 0 || k0 > bk0 || (k0 == bk0 && (k1 > bk1 || (k1 == bk1 && (k2 > bk2 || (k2 == bk2 && k3 > bk3)))))) {
            best = c; bk0 = k0; bk1 = k1; bk2 = k2; bk3 = k3;
        }
    }
    return best;
}

static int lead_against_nil(const Table *t, uint64_t cards, const int *nil_opps, int n_nil) {
    uint64_t held = 0;
    for (uint64_t m = cards; m; m &= m - 1) {
        int c = lowest_bit(m), ok = 1;
        for (int k = 0; k < n_nil; k++)
            if (void_in(t, nil_opps[k], c / 13)) { ok = 0; break; }
        if (ok) held |= (uint64_t)1 << c;
    }
    uint64_t pool = held ? held : cards;
    int best = -1, bk0 = 0, bk1 = 0;
    for (uint64_t m = pool; m; m &= m - 1) {
        int c = lowest_bit(m), k0 = c % 13, k1 = c >= SPADE_FIRST;
        if (best < 0 || k0 < bk0 || (k0 == bk0 && k1 < bk1)) { best = c; bk0 = k0; bk1 = k1; }
    }
    return best;
}

/* The side suit the partner asked for by its discards (heuristic_decisions.py _asked_suit), or -1. */
static int asked_suit(const Table *t, uint64_t cards) {
    int partner = t->partner, discards = t->conv[HEUR_CONV_DISCARDS];
    if (partner < 0 || (discards != DISCARDS_HIGH_ASKS && discards != DISCARDS_LOW_ASKS)) return -1;
    for (int suit = 0; suit < 3; suit++) {
        if (void_in(t, partner, suit) || !(cards & SUIT_MASK(suit))) continue;
        uint64_t shown = t->played[partner] & SUIT_MASK(suit);
        if (!shown) continue;
        int unled = 0;
        for (int s = 0; s < 4; s++)
            if (s != partner && !void_in(t, s, suit) && !(t->played[s] & SUIT_MASK(suit))) unled = 1;
        if (!unled) continue;
        if (discards == DISCARDS_HIGH_ASKS ? highest_bit(shown) % 13 >= SIGNAL_HIGH_RANK
                                           : lowest_bit(shown) % 13 < SIGNAL_HIGH_RANK) return suit;
    }
    return -1;
}

/* leads=trumps (heuristic_decisions.py _trump_lead): a spade to lead, or -1. */
static int trump_lead(const Table *t, uint64_t cards, const int *opps, int n_opps) {
    uint64_t spades = cards & SPADE_MASK;
    int count = popcount(t->hand & SPADE_MASK), all_void = 1;
    for (int k = 0; k < n_opps; k++) all_void &= void_in(t, opps[k], SPADES);
    if (!spades || !(t->unseen & SPADE_MASK) || all_void) return -1;
    int top = highest_bit(spades);
    if (is_master(t, top) && count >= 3) return top;
    return count >= 4 ? lowest_bit(spades) : -1;
}

/* leads=partner_suit (heuristic_decisions.py _partner_suit): the suit to lead, or -1. */
static int partner_suit(const Table *t, uint64_t cards, const int *opps, int n_opps) {
    int partner = t->partner, best = -1, best_rank = -1;
    if (partner < 0) return -1;
    for (uint64_t m = t->played[partner]; m; m &= m - 1) {
        int c = lowest_bit(m), suit = c / 13;
        if (suit == SPADES || c % 13 <= best_rank || void_in(t, partner, suit)) continue;
        if (!(cards & SUIT_MASK(suit))) continue;
        int ruffed = 0;
        for (int k = 0; k < n_opps; k++)
            if (void_in(t, opps[k], suit) && !void_in(t, opps[k], SPADES)) ruffed = 1;
        if (ruffed) continue;
        best = suit; best_rank = c % 13;
    }
    return best;
}

static int lead_for_tricks(const Table *t, uint64_t cards) {
    int opps[4], n_opps = 0;
    for (int s = 1; s < t->n; s++)
        if (s != t->partner) opps[n_opps++] = s;
    if (t->conv[HEUR_CONV_LEADS] == LEADS_TRUMPS) {
        int trump = trump_lead(t, cards, opps, n_opps);
        if (trump >= 0) return trump;
    }
    /* 1. side-suit masters while a ruff is unlikely, the safest first */
    int best = -1;
    double best_risk = RUFF_RISK_LIMIT;
    for (uint64_t m = cards & ~SPADE_MASK; m; m &= m - 1) {
        int c = lowest_bit(m);
        if (!is_master(t, c)) continue;
        double risk = ruff_chance(t, c / 13, opps, n_opps);
        if (risk < best_risk) { best = c; best_risk = risk; }
    }
    if (best >= 0) return best;
    int asked = asked_suit(t, cards);
    if (asked < 0 && t->conv[HEUR_CONV_LEADS] == LEADS_PARTNER_SUIT) asked = partner_suit(t, cards, opps, n_opps);
    if (asked >= 0) return lowest_bit(cards & SUIT_MASK(asked));
    /* 2. top spades */
    int top_spade = -1;
    for (uint64_t m = cards & SPADE_MASK; m; m &= m - 1) {
        int c = lowest_bit(m);
        if (is_master(t, c)) top_spade = c;
    }
    if (top_spade >= 0) return top_spade;
    int have_spades = (t->hand & SPADE_MASK) != 0, partner = t->partner;
    /* 3. the partner's void (it ruffs), unless an opponent shows the same void */
    if (partner >= 0 && !void_in(t, partner, SPADES) && (t->unseen & SPADE_MASK)) {
        for (uint64_t m = cards & ~SPADE_MASK; m; m &= m - 1) {
            int c = lowest_bit(m), s = c / 13;
            if (!void_in(t, partner, s)) continue;
            int opp_void = 0;
            for (int k = 0; k < n_opps; k++) opp_void |= void_in(t, opps[k], s);
            if (!opp_void) return lowest_bit(cards & SUIT_MASK(s));
        }
    }
    /* 4. low from a good suit */
    int best_low = -1;
    double best_score = 0.0;
    int best_tie = 0;
    for (int suit = 0; suit < 4; suit++) {
        uint64_t in_suit = cards & SUIT_MASK(suit);
        if (!in_suit) continue;
        int length = popcount(t->hand & SUIT_MASK(suit)), low = lowest_bit(in_suit), top = highest_bit(in_suit);
        double score = 0.3 * (double)length;
        if (suit == SPADES) {
            score -= length * 2 < popcount(t->unseen & SPADE_MASK) ? 1.0 : -0.5;
        } else {
            if (length <= 2 && have_spades && !is_master(t, top)) score += 2.0;
            if (!is_master(t, top) && top % 13 >= QUEEN && length >= 2) score -= 2.0;
            int ruffed = 0;
            for (int k = 0; k < n_opps; k++)
                if (void_in(t, opps[k], suit) && !void_in(t, opps[k], SPADES)) ruffed = 1;
            if (ruffed) score -= 3.0;
        }
        int tie = -(low % 13);
        if (best_low < 0 || score > best_score || (score == best_score && tie > best_tie)) {
            best_low = low; best_score = score; best_tie = tie;
        }
    }
    return best_low;
}

static int follow_for_tricks(const Table *t, uint64_t winners, uint64_t losers) {
    int partner = t->partner;
    if (partner >= 0 && t->win_seat == partner) {
        if (holds(t, t->win_card)) return throw_low(t, losers ? losers : winners);
        for (uint64_t m = winners; m; m &= m - 1)
            if (holds(t, lowest_bit(m))) return lowest_bit(m);      /* third hand high, cheaply */
        return throw_low(t, losers ? losers : winners);
    }
    if (winners) {
        if (!t->n_opps_after) return lowest_bit(winners);
        for (uint64_t m = winners; m; m &= m - 1)
            if (holds(t, lowest_bit(m))) return lowest_bit(m);
        if (partner >= 0 && partner <= t->after_count) return throw_low(t, losers ? losers : winners);
        return lowest_bit(winners);
    }
    return throw_low(t, losers);
}

static int choose_card(const SeatView *v, uint64_t legal_cards, const int32_t *conv) {
    Table table, *t = &table;
    table_init(t, v, legal_cards, conv);
    uint64_t cards = t->legal;
    if (!cards) return HEUR_ERR_NO_LEGAL;
    if (!(cards & (cards - 1))) return lowest_bit(cards);
    int partner = t->partner;
    int my_nil = intact_nil(t, 0);
    int partner_nil = partner >= 0 && intact_nil(t, partner) && conv[HEUR_CONV_COVER] != COVER_NONE;
    int nil_opps[4], n_nil = 0;
    for (int s = 1; s < t->n; s++)
        if (s != partner && intact_nil(t, s)) nil_opps[n_nil++] = s;
    if (!t->trick_len) {
        if (my_nil) return lead_low(t, cards);
        if (partner_nil) {
            if (conv[HEUR_CONV_COVER] == COVER_STRONG) {      /* a suit the partner is void in: it sheds */
                int shed = -1;
                for (uint64_t m = cards; m; m &= m - 1) {
                    int c = lowest_bit(m);
                    if (void_in(t, partner, c / 13) && (shed < 0 || c % 13 > shed % 13)) shed = c;
                }
                if (shed >= 0) return shed;
            }
            return lead_high(t, cards);
        }
        if (n_nil) return lead_against_nil(t, cards, nil_opps, n_nil);
        return wants_tricks(t) ? lead_for_tricks(t, cards) : lead_low(t, cards);
    }
    int win_card = t->win_card;
    uint64_t winners = win_card >= SPADE_FIRST ? cards & above(win_card) : cards & (above(win_card) | SPADE_MASK);
    uint64_t losers = cards & ~winners;
    if (my_nil) return duck(t, winners, losers);
    int played[4] = {0, 0, 0, 0};
    for (int k = 0; k < t->trick_len; k++) played[t->trick_seat[k]] = 1;
    if (partner_nil) {
        if (played[partner]) {
            if (t->win_seat == partner && winners) return lowest_bit(winners);
        } else if (winners && !void_in(t, partner, t->led) && (t->unseen & above(win_card))) {
            uint64_t in_suit = winners & SUIT_MASK(t->led);
            return in_suit ? highest_bit(in_suit) : lowest_bit(winners);
        }
    }
    if (n_nil) {
        int winner_is_nil = 0, nil_still_to_play = 0;
        for (int k = 0; k < n_nil; k++) {
            winner_is_nil |= t->win_seat == nil_opps[k];
            nil_still_to_play |= !played[nil_opps[k]];
        }
        if (winner_is_nil) {
            if (losers) return wants_tricks(t) ? throw_low(t, losers) : most_dangerous(losers, t->hand);
        } else if (t->win_seat == partner && nil_still_to_play) {
            if (losers) return throw_low(t, losers);
        }
    }
    if (wants_tricks(t)) return follow_for_tricks(t, winners, losers);
    return duck(t, winners, losers);
}

/* ------------------------------------------------------------------ top level */
static int view_is_sane(const SeatView *v) {
    if (v->players != 3 && v->players != 4) return 0;
    if (v->tricks_per_hand < 2 || v->tricks_per_hand > (v->players == 3 ? 17 : 13)) return 0;
    if (v->deck != spades_heuristic_deck(v->players, v->tricks_per_hand)) return 0;
    if (v->phase < PH_BLIND || v->phase > PH_PLAY) return 0;  /* no decision phase shown: malformed */
    if (v->trick_len < 0 || v->trick_len >= v->players) return 0;
    for (int k = 0; k < v->trick_len; k++) {
        if (v->trick_seat[k] < 0 || v->trick_seat[k] >= v->players) return 0;
        if (v->trick_card[k] < 0 || v->trick_card[k] >= NUM_CARDS) return 0;
    }
    for (int s = 0; s < v->players; s++) {
        if (v->bids[s] < -1 || v->bids[s] > 17 || v->tricks_taken[s] < 0 || v->tricks_taken[s] > 17) return 0;
        if (v->voids[s] < 0 || v->voids[s] > 15) return 0;
    }
    return 1;
}

static int conventions_ok(const int32_t *conv) {
    for (int k = 0; k < HEUR_CONV_COUNT; k++)
        if (conv[k] < 0 || conv[k] >= CONVENTION_VALUES[k]) return 0;
    return 1;
}

int spades_heuristic_convention_count(void) { return HEUR_CONV_COUNT; }

int spades_heuristic_act(const SeatView *v, const uint64_t legal[2]) {
    return spades_heuristic_act_with(v, legal, STANDARD_CONVENTIONS);
}

int spades_heuristic_act_with(const SeatView *v, const uint64_t legal_in[2], const int32_t *conv) {
    if (!conv) conv = STANDARD_CONVENTIONS;
    if (!conventions_ok(conv)) return HEUR_ERR_BAD_CONVENTIONS;
    uint64_t legal[2] = {legal_in[0], legal_in[1] & LEGAL_HIGH_BITS};
    int count = popcount(legal[0]) + popcount(legal[1]);
    if (!count) return HEUR_ERR_NO_LEGAL;
    int lowest = legal[0] ? lowest_bit(legal[0]) : 64 + lowest_bit(legal[1]);
    if (count == 1) return lowest;
    /* The free signal (heuristic_decisions.py choose_message): message 0, the lowest legal one. */
    uint64_t messages = legal[1] >> (MESSAGE_BASE - 64);
    if (messages) return MESSAGE_BASE + lowest_bit(messages);
    if (!view_is_sane(v)) return HEUR_ERR_BAD_VIEW;
    int action;
    switch (v->phase) {
        case PH_PLAY: action = choose_card(v, legal[0], conv); break;
        case PH_BIDDING: action = choose_bid(v, legal, conv); break;
        case PH_PASSING: action = choose_pass(v, legal); break;
        default: action = choose_blind_nil(v, legal, conv); break;   /* PH_BLIND (view_is_sane) */
    }
    if (action < 0) return action;
    if (!has_action(legal, action)) action = lowest;     /* never happens; never play illegally */
    return action;
}

/* ------------------------------------------------------------------ from observation vectors */
/* Block offsets of the observation (spades_env.observation.Layout.obs_blocks), in this order. */
enum {
    L_HAND, L_PHASE, L_BIDS, L_PASSED, L_TRICKS_TAKEN, L_TRICK_LEADER, L_CURRENT_TRICK, L_PLAYED, L_VOIDS,
    L_SIDES, L_GAME, L_PLAYERS, L_SIDES_COUNT, L_TRICKS_PER_HAND, L_NUM_ACTIONS, L_OBS_SIZE, L_COUNT
};
enum { BID_SLOTS = 15, SIDE_SLOTS = 7, NUM_PHASES = 6 };

int spades_heuristic_layout_count(void) { return L_COUNT; }

/* Python's int(round(x)) for a finite double (round half to even); 0 and an error if not finite. */
static int round_half_even(double x, int64_t *out) {
    if (!isfinite(x) || fabs(x) > 9.0e15) return 0;
    double r = nearbyint(x);
    *out = (int64_t)r;
    return 1;
}

static int view_from_obs(const float *o, const int64_t *L, SeatView *v) {
    int n = (int)L[L_PLAYERS];
    memset(v, 0, sizeof *v);
    v->players = n;
    v->partnerships = L[L_SIDES_COUNT] == 2;
    v->phase = -1;
    v->tricks_per_hand = (int32_t)L[L_TRICKS_PER_HAND];
    v->deck = spades_heuristic_deck(n, v->tricks_per_hand);
    for (int c = 0; c < NUM_CARDS; c++) {
        if (o[L[L_HAND] + c] > 0.5f) v->hand |= (uint64_t)1 << c;
        if (o[L[L_PASSED] + c] > 0.5f) v->passed |= (uint64_t)1 << c;
    }
    for (int p = 0; p < NUM_PHASES; p++)
        if (o[L[L_PHASE] + p] > 0.5f) v->phase = p;                 /* the last one set, as decode does */
    int tricks_width = (int)L[L_TRICKS_PER_HAND] + 1, leader = -1;
    int trick_card[4] = {-1, -1, -1, -1};
    for (int s = 0; s < n; s++) {
        v->bids[s] = -1;
        for (int b = 0; b < BID_SLOTS; b++)
            if (o[L[L_BIDS] + s * BID_SLOTS + b] > 0.5f) {
                if (b == BID_SLOTS - 1) v->blind[s] = 1;
                else v->bids[s] = b;
            }
        for (int k = 0; k < tricks_width; k++)
            if (o[L[L_TRICKS_TAKEN] + s * tricks_width + k] > 0.5f) v->tricks_taken[s] = k;
        if (o[L[L_TRICK_LEADER] + s] > 0.5f) leader = s;
        for (int c = 0; c < NUM_CARDS; c++) {
            if (o[L[L_CURRENT_TRICK] + s * NUM_CARDS + c] > 0.5f) trick_card[s] = c;
            if (o[L[L_PLAYED] + s * NUM_CARDS + c] > 0.5f) v->played[s] |= (uint64_t)1 << c;
        }
        for (int x = 0; x < 4; x++)
            if (o[L[L_VOIDS] + s * 4 + x] > 0.5f) v->voids[s] |= 1 << x;
    }
    if (leader >= 0)
        for (int k = 0; k < n; k++) {
            int seat = (leader + k) % n;
            if (trick_card[seat] >= 0) {
                if (v->trick_len >= n - 1) return 0;               /* a full trick is never on the table */
                v->trick_seat[v->trick_len] = seat;
                v->trick_card[v->trick_len++] = trick_card[seat];
            }
        }
    int64_t target;
    if (!round_half_even((double)o[L[L_GAME]] * 1000.0, &target)) return 0;
    v->target_score = target;
    for (int j = 0; j < 2 && j < L[L_SIDES_COUNT]; j++)
        if (!round_half_even((double)o[L[L_SIDES] + j * SIDE_SLOTS] * (double)target, &v->scores[j])) return 0;
    return 1;
}

static int layout_is_sane(const int64_t *L) {
    int64_t n = L[L_PLAYERS], size = L[L_OBS_SIZE], sides = L[L_SIDES_COUNT], T = L[L_TRICKS_PER_HAND];
    if ((n != 3 && n != 4) || (sides != 2 && sides != n) || T < 2 || T > (n == 3 ? 17 : 13) || size < 1) return 0;
    if (L[L_NUM_ACTIONS] < MESSAGE_BASE || L[L_NUM_ACTIONS] > MAX_ACTIONS) return 0;
    int64_t ends[] = {L[L_HAND] + NUM_CARDS, L[L_PHASE] + NUM_PHASES, L[L_BIDS] + n * BID_SLOTS,
                      L[L_PASSED] + NUM_CARDS, L[L_TRICKS_TAKEN] + n * (T + 1), L[L_TRICK_LEADER] + n,
                      L[L_CURRENT_TRICK] + n * NUM_CARDS, L[L_PLAYED] + n * NUM_CARDS, L[L_VOIDS] + n * 4,
                      L[L_SIDES] + sides * SIDE_SLOTS, L[L_GAME] + 1};
    for (int i = 0; i < L_PLAYERS; i++)
        if (L[i] < 0 || ends[i] > size) return 0;
    return 1;
}

/* One row: its view decoded from the observation, its legal actions from the mask. */
static int64_t decide_row(const float *o, const uint8_t *m, const int64_t *layout, const int32_t *conv) {
    SeatView v;
    uint64_t legal[2] = {0, 0};
    for (int a = 0; a < layout[L_NUM_ACTIONS]; a++) if (m[a]) legal[a >> 6] |= (uint64_t)1 << (a & 63);
    return view_from_obs(o, layout, &v) ? spades_heuristic_act_with(&v, legal, conv) : HEUR_ERR_BAD_OBS;
}

int64_t spades_heuristic_decide(const float *obs, const uint8_t *mask, const int64_t *layout) {
    return decide_row(obs, mask, layout, STANDARD_CONVENTIONS);
}

int spades_heuristic_layout_ok(const int64_t *layout) { return layout_is_sane(layout); }

/* The heuristic at every row of observations (rows x obs_size float32) and masks (rows x the
 * layout's action count, 68 + signals, nonzero = legal). out[r] is the action, or a negative HEUR_ERR_* code for that row. Returns
 * 0, or HEUR_ERR_BAD_OBS if the layout itself is malformed (nothing is written then). */
int64_t spades_heuristic_from_obs(const float *obs, const uint8_t *mask, int64_t rows, const int64_t *layout,
                                  int64_t *out, int64_t threads) {
    return spades_heuristic_from_obs_with(obs, mask, rows, layout, STANDARD_CONVENTIONS, out, threads);
}

int64_t spades_heuristic_from_obs_with(const float *obs, const uint8_t *mask, int64_t rows, const int64_t *layout,
                                       const int32_t *conv, int64_t *out, int64_t threads) {
    if (!conv) conv = STANDARD_CONVENTIONS;
    if (!conventions_ok(conv)) return HEUR_ERR_BAD_CONVENTIONS;
    if (!layout_is_sane(layout) || rows < 0) return HEUR_ERR_BAD_OBS;
    int64_t size = layout[L_OBS_SIZE], actions = layout[L_NUM_ACTIONS];
#ifdef _OPENMP
    if (threads > 1 && rows >= 64) {
#pragma omp parallel for num_threads((int)threads) schedule(dynamic, 64)   /* a busy core slows no one */
        for (int64_t r = 0; r < rows; r++) out[r] = decide_row(obs + r * size, mask + r * actions, layout, conv);
        return 0;
    }
#endif
    (void)threads;
    for (int64_t r = 0; r < rows; r++) out[r] = decide_row(obs + r * size, mask + r * actions, layout, conv);
    return 0;
}
