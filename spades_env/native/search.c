/* The search player's inner loops in C: sampling worlds and heuristic play-outs.
 *
 * agents/search.py is the readable reference of the method (perfect-information Monte Carlo
 * over worlds sampled exactly uniformly from what the seat knows, weighted by the bids, played
 * out by the heuristic on every seat); agents/native_search.py drives this file the same way:
 *
 *   spades_search_sample    draws worlds: the unseen cards dealt to the hidden seats uniformly
 *                           among the deals that respect every seat's hand size, its shown voids
 *                           and the cards known to sit in it, by counting the completions of
 *                           each per-suit split (a dynamic program over suits, exact integers);
 *                           and, for bid inference, each world's likelihood of the bids made;
 *   spades_search_playouts  plays every (world, candidate card) pair to the end of the hand with
 *                           heuristic.c on every seat, and scores the hand: the observer's side's
 *                           score change minus the other side's (cutthroat: minus the mean of the
 *                           others'), parallel over worlds (OpenMP), each pair's value independent
 *                           of the thread count; spades_search_playouts_endgame solves the last
 *                           tricks exactly instead, and spades_search_playouts_tricks returns
 *                           the tricks each seat took for the caller to score.
 *
 * Positions are in the observer's frame: seat 0 is the searching seat, seats are relative.
 * The play-out engine below is a compact copy of spades_env/game.py's play phase and of
 * spades_env/scoring.py; tests/test_native_search.py checks it against them.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "heuristic.h"
#include "solver.h"

typedef int64_t i64;
enum { NCARDS = 52, SPADE0 = 39, PLAY_PHASE = 3, BIDDING_PHASE = 1, BID_ACTION0 = 52 };
#define DECK ((uint64_t)0xFFFFFFFFFFFFFULL)
#define SUIT(s) ((uint64_t)0x1FFF << (13 * (s)))
#define NON_SPADES (DECK & ~SUIT(3))

/* Rule parameters (int64), in agents/native_search.py RULE_FIELDS order, then the search's own
 * price of a carried bag (R_BAG_COST, points; 0: the hand's points as the game scores them). */
enum {
    R_PLAYERS, R_PARTNERSHIPS, R_NO_SPADES_FIRST_TRICK, R_SPADES_LEAD, R_NIL_TRICKS_COUNT_FOR_PARTNER,
    R_NIL_BONUS, R_BLIND_NIL_BONUS, R_BAGS, R_BAG_LIMIT, R_BAG_PENALTY, R_BAGS_FROM_SCORE_DIGIT, R_DECK_RANKS,
    R_BAG_COST, R_COUNT
};
enum { LEAD_BROKEN = 0, LEAD_ANY = 1, LEAD_FORCED_ONLY = 2 };
/* The position (int64), in agents/native_search.py POSITION_FIELDS order; per-seat entries
 * are relative seats 0..3, per-side entries relative sides 0..3. */
enum {
    P_PLAYED = 0, P_VOIDS = 4, P_BIDS = 8, P_BLIND = 12, P_TRICKS_TAKEN = 16, P_TRICK_LEN = 20, P_TRICK = 21,
    P_LEADER = 25, P_BROKEN = 26, P_PASSED = 27, P_RECEIVED = 28, P_SCORES = 29, P_BAGS = 33,
    P_PASSED_BY_1 = 37, P_PASSED_BY_3 = 38,   /* the opponents' passes: known on a true table, 0 in a search */
    P_COUNT = 39
};
enum { SEARCH_OK = 0, SEARCH_ERR_ARGS = -10, SEARCH_ERR_NO_DEAL = -11, SEARCH_ERR_ILLEGAL = -12,
       SEARCH_ERR_HEURISTIC = -13, SEARCH_ERR_MEMORY = -14 };

int spades_search_counts(i64 *out) { out[0] = R_COUNT; out[1] = P_COUNT; return 0; }

/* ------------------------------------------------------------------ random numbers */
typedef struct { uint64_t s[4]; } Rng;

static uint64_t splitmix(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}
static void rng_seed(Rng *r, uint64_t seed) { for (int i = 0; i < 4; i++) r->s[i] = splitmix(&seed); }
static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
static uint64_t rng_next(Rng *r) {                          /* xoshiro256** */
    uint64_t *s = r->s, out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3]; s[2] ^= t; s[3] = rotl(s[3], 45);
    return out;
}
/* Uniform in [0, n), n >= 1, without modulo bias. */
static uint64_t rng_below(Rng *r, uint64_t n) {
    uint64_t threshold = (0 - n) % n, x;
    do { x = rng_next(r); } while (x < threshold);
    return x % n;
}
static void shuffle(int *a, int count, Rng *r) {
    for (int i = count - 1; i > 0; i--) {
        int j = (int)rng_below(r, (uint64_t)i + 1), t = a[i];
        a[i] = a[j]; a[j] = t;
    }
}

/* ------------------------------------------------------------------ uniform deals */
enum { MAX_HIDDEN = 4, CAP_DIM = 18 };
typedef struct {
    int k;                          /* hidden seats */
    int caps[MAX_HIDDEN];           /* cards each must get */
    int suit_cards[4][13], suit_count[4];
    int allowed[4][MAX_HIDDEN], n_allowed[4];
    int simple;                     /* no void binds: a shuffle is uniform */
    uint64_t *memo;                 /* count(x, caps) + 1 (0 = not computed), 4 x CAP_DIM^k */
    uint64_t binom[18][18];
} Sampler;

static size_t memo_index(const Sampler *sp, int x, const int *caps) {
    size_t i = (size_t)x;
    for (int j = 0; j < sp->k; j++) i = i * CAP_DIM + (size_t)caps[j];
    return i;
}

static uint64_t count_deals(Sampler *sp, int x, const int *caps);

/* Call visit(counts, weight) for every split of suit x within caps (counts per hidden seat). */
typedef struct { Sampler *sp; int x; const int *caps; uint64_t total; uint64_t target; int found;
                 int counts[MAX_HIDDEN]; int chosen[MAX_HIDDEN]; int mode; } SplitWalk;

static void walk_splits(SplitWalk *w, int j, int left, uint64_t weight) {
    Sampler *sp = w->sp;
    int x = w->x, na = sp->n_allowed[x];
    if (w->found) return;
    if (j == na - 1) {
        int i = sp->allowed[x][j];
        if (left > w->caps[i]) return;
        w->counts[i] = left;
        int rest[MAX_HIDDEN];
        for (int a = 0; a < sp->k; a++) rest[a] = w->caps[a] - w->counts[a];
        uint64_t sub = count_deals(sp, x + 1, rest), add = weight * sub;
        if (sub) {
            w->total += add;
            if (w->mode == 1 && w->target < w->total) {
                w->found = 1;
                memcpy(w->chosen, w->counts, sizeof w->chosen);
            }
        }
        w->counts[i] = 0;
        return;
    }
    int i = sp->allowed[x][j], rest_cap = 0;
    for (int a = j + 1; a < na; a++) rest_cap += w->caps[sp->allowed[x][a]];
    int lo = left - rest_cap > 0 ? left - rest_cap : 0, hi = w->caps[i] < left ? w->caps[i] : left;
    for (int c = lo; c <= hi && !w->found; c++) {
        w->counts[i] = c;
        walk_splits(w, j + 1, left - c, weight * sp->binom[left][c]);
    }
    w->counts[i] = 0;
}

static uint64_t count_deals(Sampler *sp, int x, const int *caps) {
    if (x == 4) {
        for (int a = 0; a < sp->k; a++) if (caps[a]) return 0;
        return 1;
    }
    size_t idx = memo_index(sp, x, caps);
    if (sp->memo[idx]) return sp->memo[idx] - 1;
    uint64_t total;
    if (!sp->suit_count[x]) {
        total = count_deals(sp, x + 1, caps);
    } else if (!sp->n_allowed[x]) {
        total = 0;
    } else {
        SplitWalk w = {sp, x, caps, 0, 0, 0, {0}, {0}, 0};
        walk_splits(&w, 0, sp->suit_count[x], 1);
        total = w.total;
    }
    sp->memo[idx] = total + 1;
    return total;
}

static int sampler_init(Sampler *sp, uint64_t free_cards, const i64 *caps, const i64 *voids, int k) {
    memset(sp, 0, sizeof *sp);
    sp->k = k;
    int total_caps = 0;
    for (int a = 0; a < k; a++) {
        if (caps[a] < 0 || caps[a] >= CAP_DIM) return SEARCH_ERR_ARGS;
        sp->caps[a] = (int)caps[a];
        total_caps += (int)caps[a];
    }
    if (total_caps != __builtin_popcountll(free_cards)) return SEARCH_ERR_NO_DEAL;
    for (int n = 0; n < 18; n++) {
        sp->binom[n][0] = 1;
        for (int c = 1; c <= n; c++) sp->binom[n][c] = sp->binom[n - 1][c - 1] + (c < n ? sp->binom[n - 1][c] : 0);
    }
    sp->simple = 1;
    for (int x = 0; x < 4; x++) {
        for (int r = 0; r < 13; r++)
            if (free_cards >> (13 * x + r) & 1) sp->suit_cards[x][sp->suit_count[x]++] = 13 * x + r;
        for (int a = 0; a < k; a++)
            if (!(voids[a] >> x & 1)) sp->allowed[x][sp->n_allowed[x]++] = a;
        if (sp->suit_count[x] && sp->n_allowed[x] != k) sp->simple = 0;
    }
    if (sp->simple) return SEARCH_OK;
    size_t size = 5;
    for (int a = 0; a < k; a++) size *= CAP_DIM;
    sp->memo = calloc(size, sizeof(uint64_t));
    if (!sp->memo) return SEARCH_ERR_MEMORY;
    if (!count_deals(sp, 0, sp->caps)) return SEARCH_ERR_NO_DEAL;
    return SEARCH_OK;
}

static void sampler_draw(Sampler *sp, Rng *r, uint64_t *hands) {
    int k = sp->k;
    for (int a = 0; a < k; a++) hands[a] = 0;
    if (sp->simple) {
        int cards[NCARDS], n = 0;
        for (int x = 0; x < 4; x++)
            for (int i = 0; i < sp->suit_count[x]; i++) cards[n++] = sp->suit_cards[x][i];
        shuffle(cards, n, r);
        int pos = 0;
        for (int a = 0; a < k; a++)
            for (int c = 0; c < sp->caps[a]; c++) hands[a] |= (uint64_t)1 << cards[pos++];
        return;
    }
    int caps[MAX_HIDDEN];
    memcpy(caps, sp->caps, sizeof caps);
    for (int x = 0; x < 4; x++) {
        int u = sp->suit_count[x];
        if (!u) continue;
        SplitWalk all = {sp, x, caps, 0, 0, 0, {0}, {0}, 0};
        walk_splits(&all, 0, u, 1);
        SplitWalk pick = {sp, x, caps, 0, rng_below(r, all.total), 0, {0}, {0}, 1};
        walk_splits(&pick, 0, u, 1);
        int cards[13];
        memcpy(cards, sp->suit_cards[x], sizeof(int) * (size_t)u);
        shuffle(cards, u, r);
        int pos = 0;
        for (int a = 0; a < k; a++) {
            for (int c = 0; c < pick.chosen[a]; c++) hands[a] |= (uint64_t)1 << cards[pos++];
            caps[a] -= pick.chosen[a];
        }
    }
}

/* Bid inference: per inferred seat (relative), what it saw when it bid. */
enum { I_SEAT, I_BIDS = 1, I_BLIND = 5, I_LEGAL_LO = 9, I_LEGAL_HI = 10, I_ACTUAL = 11, I_REMOVE = 12, I_ADD = 13,
       I_COUNT = 14 };

/* Cards each seat gets under `rules`: 4 * deck_ranks / players (13, 17 with three, fewer in a short deck). */
static int rules_tricks_per_hand(const i64 *rules) { return (int)(4 * rules[R_DECK_RANKS] / rules[R_PLAYERS]); }
/* The deck the rules describe is one the play-outs know: 13 ranks, or a short deck of four players. */
static int rules_ok(const i64 *rules) {
    return rules[R_DECK_RANKS] == 13 || (rules[R_PLAYERS] == 4 && rules[R_DECK_RANKS] >= 2 && rules[R_DECK_RANKS] < 13);
}

static double bid_likelihood(const uint64_t *hands, const i64 *position, const i64 *rules, const i64 *infer,
                             int n_infer, double sharpness, double nil_mismatch) {
    double weight = 1.0;
    int tricks_per_hand = rules_tricks_per_hand(rules);
    for (int q = 0; q < n_infer; q++) {
        const i64 *f = infer + q * I_COUNT;
        int s = (int)f[I_SEAT];
        SeatView v;
        memset(&v, 0, sizeof v);
        v.players = (int32_t)rules[R_PLAYERS];
        v.partnerships = (int32_t)rules[R_PARTNERSHIPS];
        v.phase = BIDDING_PHASE;
        v.tricks_per_hand = tricks_per_hand;
        v.deck = spades_heuristic_deck(v.players, tricks_per_hand);
        v.hand = ((hands[s] | (uint64_t)position[P_PLAYED + s]) & ~(uint64_t)f[I_REMOVE]) | (uint64_t)f[I_ADD];
        for (int t = 0; t < 4; t++) { v.bids[t] = (int32_t)f[I_BIDS + t]; v.blind[t] = (int32_t)f[I_BLIND + t]; }
        uint64_t legal[2] = {(uint64_t)f[I_LEGAL_LO], (uint64_t)f[I_LEGAL_HI]};
        int action = spades_heuristic_act(&v, legal);
        if (action < 0) continue;
        int predicted = action - BID_ACTION0, actual = (int)f[I_ACTUAL];
        if ((predicted == 0) != (actual == 0)) weight *= nil_mismatch;
        else if (actual) weight *= exp(-sharpness * (double)abs(predicted - actual));
    }
    return weight;
}

/* Draw `count` worlds: out_hands (count x 4, relative seats; seat 0's own hand included) and,
 * when n_infer > 0, out_weights (the bids' likelihood of each world). */
i64 spades_search_sample(const i64 *rules, const i64 *position, i64 own_hand, i64 free_cards, const i64 *hidden,
                         const i64 *caps, const i64 *voids, const i64 *known, i64 k, i64 count, uint64_t seed,
                         const i64 *infer, i64 n_infer, double sharpness, double nil_mismatch,
                         i64 *out_hands, double *out_weights) {
    int n = (int)rules[R_PLAYERS];
    if ((n != 3 && n != 4) || k < 1 || k > n || count < 0 || n_infer < 0 || n_infer > 3) return SEARCH_ERR_ARGS;
    if (!rules_ok(rules)) return SEARCH_ERR_ARGS;
    uint64_t deck = spades_heuristic_deck(n, rules_tricks_per_hand(rules));
    if ((uint64_t)free_cards & ~deck || (uint64_t)own_hand & ~deck) return SEARCH_ERR_ARGS;
    for (int a = 0; a < k; a++) if (hidden[a] < 0 || hidden[a] >= n) return SEARCH_ERR_ARGS;
    for (int q = 0; q < n_infer; q++) if (infer[q * I_COUNT + I_SEAT] < 0 || infer[q * I_COUNT + I_SEAT] >= n)
        return SEARCH_ERR_ARGS;
    Sampler sp;
    int status = sampler_init(&sp, (uint64_t)free_cards, caps, voids, (int)k);
    if (status != SEARCH_OK) { free(sp.memo); return status; }
    Rng r;
    rng_seed(&r, seed);
    for (i64 w = 0; w < count; w++) {
        uint64_t drawn[MAX_HIDDEN], hands[4] = {(uint64_t)own_hand, 0, 0, 0};
        sampler_draw(&sp, &r, drawn);
        for (int a = 0; a < k; a++) hands[hidden[a]] = drawn[a] | (uint64_t)known[hidden[a]];
        for (int s = 0; s < 4; s++) out_hands[w * 4 + s] = (i64)hands[s];
        if (n_infer) out_weights[w] = bid_likelihood(hands, position, rules, infer, (int)n_infer, sharpness,
                                                     nil_mismatch);
    }
    free(sp.memo);
    return SEARCH_OK;
}

/* ------------------------------------------------------------------ the play-out engine */
typedef struct {
    int n, sides;
    uint64_t deck;                  /* the cards in play (spades_heuristic_deck) */
    uint64_t hands[4], played[4], passed[4];
    int voids[4], bids[4], blind[4], tricks_taken[4];
    int tricks_played, tricks_per_hand, trick_len, trick[4], leader, led, win_card, win_seat, broken, to_act;
} Game;

static uint64_t legal_cards(const Game *g, const i64 *rules) {
    uint64_t hand = g->hands[g->to_act];
    if (g->trick_len) {
        uint64_t follow = hand & SUIT(g->led);
        if (follow) return follow;
        if (g->tricks_played == 0 && rules[R_NO_SPADES_FIRST_TRICK] && (hand & NON_SPADES)) return hand & NON_SPADES;
        return hand;
    }
    int first = g->tricks_played == 0;
    if (hand & NON_SPADES) {
        int restricted = rules[R_SPADES_LEAD] != LEAD_ANY;
        if ((restricted && !(g->broken && rules[R_SPADES_LEAD] == LEAD_BROKEN)) || (first && rules[R_NO_SPADES_FIRST_TRICK]))
            return hand & NON_SPADES;
    }
    return hand;
}

static void play_card(Game *g, int card) {
    int seat = g->to_act, suit = card / 13;
    g->hands[seat] &= ~((uint64_t)1 << card);
    g->played[seat] |= (uint64_t)1 << card;
    if (suit == 3) g->broken = 1;
    if (g->trick_len) {
        if (suit != g->led) g->voids[seat] |= 1 << g->led;
        if ((card > g->win_card && suit == g->win_card / 13) || (suit == 3 && g->win_card < SPADE0)) {
            g->win_card = card; g->win_seat = seat;
        }
    } else {
        g->leader = seat; g->led = suit; g->win_card = card; g->win_seat = seat;
    }
    g->trick[g->trick_len++] = card;
    if (g->trick_len == g->n) {
        g->tricks_taken[g->win_seat]++;
        g->tricks_played++;
        g->trick_len = 0;
        g->to_act = g->leader = g->win_seat;
        return;
    }
    g->to_act = (seat + 1) % g->n;
}

static void seat_view(const Game *g, int seat, SeatView *v) {
    int n = g->n;
    v->players = n;
    v->partnerships = g->sides == 2;
    v->phase = PLAY_PHASE;
    v->hand = g->hands[seat];
    v->passed = g->passed[seat];
    for (int t = 0; t < 4; t++) {
        if (t < n) {
            int s = (seat + t) % n;
            v->bids[t] = g->bids[s]; v->blind[t] = g->blind[s]; v->tricks_taken[t] = g->tricks_taken[s];
            v->played[t] = g->played[s]; v->voids[t] = g->voids[s];
        } else {
            v->bids[t] = -1; v->blind[t] = 0; v->tricks_taken[t] = 0; v->played[t] = 0; v->voids[t] = 0;
        }
    }
    v->trick_len = g->trick_len;
    for (int i = 0; i < g->trick_len; i++) {
        v->trick_seat[i] = ((g->leader + i) % n - seat + n) % n;
        v->trick_card[i] = g->trick[i];
    }
    v->scores[0] = v->scores[1] = 0;
    v->target_score = 0;
    v->tricks_per_hand = g->tricks_per_hand;
    v->deck = g->deck;
}

/* spades_env/scoring.py score_side: one side's points for the hand. Its twins: scoring.py (the
 * reference), spades_env/vector.py SpadesVectorEnv._score_hand (torch) and engine.c score_hand
 * (the batched C step); tests/test_scoring_twins.py drives all four over the same hands. */
static i64 cpp_remainder(i64 value, i64 divisor) { return value - divisor * (value / divisor); }

static i64 scored_points(const i64 *rules, const int *bids, const int *blind, const int *tricks, int members,
                         i64 score_before, i64 bags_before, i64 *carried) {
    *carried = 0;
    i64 contract = 0, nil_points = 0, counted = 0, nil_bags = 0;
    for (int m = 0; m < members; m++) if (bids[m] > 0) contract += bids[m];
    for (int m = 0; m < members; m++) {
        if (bids[m] == 0) {
            i64 value = blind[m] ? rules[R_BLIND_NIL_BONUS] : rules[R_NIL_BONUS];
            nil_points += tricks[m] == 0 ? value : -value;
            if (rules[R_NIL_TRICKS_COUNT_FOR_PARTNER]) counted += tricks[m];
            else nil_bags += tricks[m];
        } else {
            counted += tricks[m];
        }
    }
    int made = counted >= contract;
    i64 contract_points = made ? 10 * contract : -10 * contract, overtricks = made ? counted - contract : 0;
    if (!rules[R_BAGS]) return contract_points + nil_points;
    i64 bags_taken = overtricks + nil_bags, penalties;
    if (rules[R_BAGS_FROM_SCORE_DIGIT]) {
        i64 counter = cpp_remainder(score_before, 10) + bags_taken;
        penalties = counter > 0 ? counter / 10 : 0;
        *carried = bags_taken - 10 * penalties;
    } else {
        penalties = (bags_before + bags_taken) / rules[R_BAG_LIMIT];
        *carried = bags_taken - rules[R_BAG_LIMIT] * penalties;
    }
    return contract_points + overtricks + nil_points - rules[R_BAG_PENALTY] * penalties;
}

/* The hand's points for one side as the game scores them. */
static i64 side_points(const i64 *rules, const int *bids, const int *blind, const int *tricks, int members,
                       i64 score_before, i64 bags_before) {
    i64 carried;
    return scored_points(rules, bids, blind, tricks, members, score_before, bags_before, &carried);
}

/* What the search counts for one side: the hand's points less R_BAG_COST a bag added to the
 * carried counter (plus one a penalty cleared): spades_env/scoring.py bag_priced_points. */
static i64 valued_points(const i64 *rules, const int *bids, const int *blind, const int *tricks, int members,
                         i64 score_before, i64 bags_before) {
    i64 carried, points = scored_points(rules, bids, blind, tricks, members, score_before, bags_before, &carried);
    return points - rules[R_BAG_COST] * carried;
}

/* side_points for a test harness (spades_env.native.search_side_points): one side of `members`
 * (1 or 2) seats. Returns 0 and writes *points, or SEARCH_ERR_ARGS for arguments the play-outs
 * never produce (they are refused, not scored). */
i64 spades_search_side_points(const i64 *rules, const i64 *bids, const i64 *blind, const i64 *tricks, i64 members,
                              i64 score_before, i64 bags_before, i64 *points) {
    if (!rules || !bids || !blind || !tricks || !points || members < 1 || members > 2) return SEARCH_ERR_ARGS;
    const i64 limit = (i64)1 << 40;          /* far past any score: the sums below stay exact */
    if (rules[R_BAG_LIMIT] < 1 || score_before < -limit || score_before > limit || bags_before < -limit ||
        bags_before > limit) return SEARCH_ERR_ARGS;
    for (int k = R_NIL_BONUS; k <= R_BAG_PENALTY; k++) if (rules[k] < -limit || rules[k] > limit) return SEARCH_ERR_ARGS;
    int b[2], bl[2], t[2];
    for (int m = 0; m < members; m++) {
        if (bids[m] < 0 || bids[m] > 13 || tricks[m] < 0 || tricks[m] > 17 || blind[m] < 0 || blind[m] > 1)
            return SEARCH_ERR_ARGS;
        b[m] = (int)bids[m]; bl[m] = (int)blind[m]; t[m] = (int)tricks[m];
    }
    *points = side_points(rules, b, bl, t, (int)members, score_before, bags_before);
    return SEARCH_OK;
}

/* The observer's value of a finished hand: its side's points minus the other side's (cutthroat:
 * minus the mean of the other players'). */
static double hand_value(const Game *g, const i64 *rules, const i64 *position) {
    i64 points[4];
    if (g->sides == 2) {
        for (int side = 0; side < 2; side++) {
            int bids[2] = {g->bids[side], g->bids[side + 2]}, blind[2] = {g->blind[side], g->blind[side + 2]};
            int tricks[2] = {g->tricks_taken[side], g->tricks_taken[side + 2]};
            points[side] = valued_points(rules, bids, blind, tricks, 2, position[P_SCORES + side],
                                         position[P_BAGS + side]);
        }
        return (double)points[0] - (double)points[1];
    }
    double others = 0.0;
    for (int s = 0; s < g->n; s++) {
        points[s] = valued_points(rules, &g->bids[s], &g->blind[s], &g->tricks_taken[s], 1, position[P_SCORES + s],
                                  position[P_BAGS + s]);
        if (s) others += (double)points[s];
    }
    return (double)points[0] - others / (double)(g->n - 1);
}

static int game_from_position(Game *g, const i64 *rules, const i64 *position, const i64 *hands) {
    memset(g, 0, sizeof *g);
    int n = g->n = (int)rules[R_PLAYERS];
    g->sides = rules[R_PARTNERSHIPS] ? 2 : n;
    if (!rules_ok(rules)) return SEARCH_ERR_ARGS;
    g->tricks_per_hand = rules_tricks_per_hand(rules);
    g->deck = spades_heuristic_deck(n, g->tricks_per_hand);
    uint64_t all = 0;
    for (int s = 0; s < n; s++) {
        g->hands[s] = (uint64_t)hands[s];
        g->played[s] = (uint64_t)position[P_PLAYED + s];
        if ((g->hands[s] | g->played[s]) & ~g->deck || (g->hands[s] & g->played[s]) || (all & (g->hands[s] | g->played[s])))
            return SEARCH_ERR_ARGS;
        all |= g->hands[s] | g->played[s];
        g->voids[s] = (int)(position[P_VOIDS + s] & 15);
        g->bids[s] = (int)position[P_BIDS + s];
        g->blind[s] = position[P_BLIND + s] != 0;
        g->tricks_taken[s] = (int)position[P_TRICKS_TAKEN + s];
        if (g->bids[s] < 0 || g->bids[s] > 17 || g->tricks_taken[s] < 0 || g->tricks_taken[s] > g->tricks_per_hand)
            return SEARCH_ERR_ARGS;
        g->tricks_played += g->tricks_taken[s];
    }
    if (g->tricks_played >= g->tricks_per_hand) return SEARCH_ERR_ARGS;
    if (g->sides == 2) {                  /* the partner passed us what we received */
        g->passed[0] = (uint64_t)position[P_PASSED];
        g->passed[2] = (uint64_t)position[P_RECEIVED];
        g->passed[1] = (uint64_t)position[P_PASSED_BY_1];
        g->passed[3] = (uint64_t)position[P_PASSED_BY_3];
    } else {
        g->passed[0] = (uint64_t)position[P_PASSED];
    }
    g->trick_len = (int)position[P_TRICK_LEN];
    g->leader = (int)position[P_LEADER];
    if (g->trick_len < 0 || g->trick_len >= n || g->leader < 0 || g->leader >= n) return SEARCH_ERR_ARGS;
    g->broken = position[P_BROKEN] != 0;
    g->led = g->win_card = g->win_seat = -1;
    for (int i = 0; i < g->trick_len; i++) {
        int card = (int)position[P_TRICK + i], seat = (g->leader + i) % n;
        if (card < 0 || card >= NCARDS || !(g->played[seat] >> card & 1)) return SEARCH_ERR_ARGS;
        g->trick[i] = card;
        if (i == 0) { g->led = card / 13; g->win_card = card; g->win_seat = seat; }
        else if ((card / 13 == g->win_card / 13 && card > g->win_card) || (card >= SPADE0 && g->win_card < SPADE0)) {
            g->win_card = card; g->win_seat = seat;
        }
    }
    g->to_act = (g->leader + g->trick_len) % n;
    if (g->to_act != 0) return SEARCH_ERR_ARGS;           /* the observer is to play */
    return SEARCH_OK;
}

/* The card the heuristic plays for the seat to act (the only legal one without asking it), or -1
 * with *status set when nothing is legal or the heuristic answers an illegal card. */
static inline int heuristic_step(const Game *g, const i64 *rules, int *status) {
    uint64_t legal = legal_cards(g, rules);
    if (!(legal & (legal - 1))) {
        if (!legal) { *status = SEARCH_ERR_ILLEGAL; return -1; }
        return __builtin_ctzll(legal);
    }
    SeatView v;
    seat_view(g, g->to_act, &v);
    uint64_t legal2[2] = {legal, 0};
    int choice = spades_heuristic_act(&v, legal2);
    if (choice < 0 || choice >= NCARDS || !(legal >> choice & 1)) { *status = SEARCH_ERR_HEURISTIC; return -1; }
    return choice;
}

/* Play `card` for the observer, then the heuristic on every seat to the end of the hand. Returns
 * 1, or 0 with *status set. */
static int play_to_end(Game *g, const i64 *rules, int card, int *status) {
    uint64_t legal = legal_cards(g, rules);
    if (!(legal >> card & 1)) { *status = SEARCH_ERR_ILLEGAL; return 0; }
    play_card(g, card);
    while (g->tricks_played < g->tricks_per_hand) {
        int choice = heuristic_step(g, rules, status);
        if (choice < 0) return 0;
        play_card(g, choice);
    }
    return 1;
}

static double play_out(const Game *start, const i64 *rules, const i64 *position, int card, int *status) {
    Game g = *start;
    if (!play_to_end(&g, rules, card, status)) return 0.0;
    return hand_value(&g, rules, position);
}

/* The arguments every heuristic play-out entry point shares (rules, world count, candidates). */
static int playout_args_ok(const i64 *rules, i64 count, const i64 *candidates, i64 n_candidates) {
    int n = (int)rules[R_PLAYERS];
    if ((n != 3 && n != 4) || count < 0 || n_candidates < 1 || n_candidates > NCARDS) return 0;
    if (rules[R_BAG_LIMIT] < 1 || rules[R_SPADES_LEAD] < 0 || rules[R_SPADES_LEAD] > 2) return 0;
    if (rules[R_BAG_COST] < 0 || rules[R_BAG_COST] > 1000) return 0;
    for (i64 c = 0; c < n_candidates; c++) if (candidates[c] < 0 || candidates[c] >= NCARDS) return 0;
    return 1;
}

/* The endgame tables: each side's points for the hand by its members' final tricks (the
 * solver maximises the observer's side 0 entry minus side 1's: hand_value's difference). */
static void endgame_tables(const Game *g, const i64 *rules, const i64 *position,
                           int32_t tables[2][SOLVER_TABLE][SOLVER_TABLE]) {
    for (int side = 0; side < 2; side++) {
        int bids[2] = {g->bids[side], g->bids[side + 2]}, blind[2] = {g->blind[side], g->blind[side + 2]};
        for (int a = 0; a < SOLVER_TABLE; a++)
            for (int b = 0; b < SOLVER_TABLE; b++) {
                int tricks[2] = {a, b};
                tables[side][a][b] = a + b <= 13 ? (int32_t)valued_points(rules, bids, blind, tricks, 2,
                                                                         position[P_SCORES + side],
                                                                         position[P_BAGS + side]) : 0;
            }
    }
}

/* play_out, but once `endgame` tricks or fewer remain the rest is solved exactly (solver.c):
 * every seat plays the card that is best for its side with every hand known. */
static double play_out_endgame(const Game *start, const i64 *rules, const i64 *position, int card, int endgame,
                               const int32_t tables[2][SOLVER_TABLE][SOLVER_TABLE], int *status) {
    Game g = *start;
    uint64_t legal = legal_cards(&g, rules);
    if (!(legal >> card & 1)) { *status = SEARCH_ERR_ILLEGAL; return 0.0; }
    play_card(&g, card);
    while (g.tricks_played < g.tricks_per_hand) {
        if (g.tricks_per_hand - g.tricks_played <= endgame) {
            SolverPosition p;
            memset(&p, 0, sizeof p);
            for (int s = 0; s < 4; s++) { p.hands[s] = g.hands[s]; p.taken[s] = g.tricks_taken[s]; }
            p.trick_len = g.trick_len;
            for (int i = 0; i < g.trick_len; i++) p.trick[i] = g.trick[i];
            p.leader = g.trick_len ? g.leader : g.to_act;
            p.broken = g.broken;
            p.tricks_played = g.tricks_played;
            p.tricks_per_hand = g.tricks_per_hand;
            p.spades_lead = (int)rules[R_SPADES_LEAD];
            p.no_spades_first_trick = (int)rules[R_NO_SPADES_FIRST_TRICK];
            p.max_side = 0;
            p.tables = (const int32_t (*)[SOLVER_TABLE][SOLVER_TABLE])tables;
            int32_t value;
            int code = spades_solver_position_value(&p, &value, NULL);
            if (code) { *status = code == SOLVER_ERR_MEMORY ? SEARCH_ERR_MEMORY : SEARCH_ERR_ARGS; return 0.0; }
            return (double)value;
        }
        int choice = heuristic_step(&g, rules, status);
        if (choice < 0) return 0.0;
        play_card(&g, choice);
    }
    return hand_value(&g, rules, position);
}

/* What a play-out entry point computes for each (world, candidate). */
enum { PLAY_VALUE, PLAY_ENDGAME, PLAY_TRICKS };

/* The loop the play-out entry points share: every world (in parallel over `threads`), every
 * candidate card, the play-out of `mode`: the observer's hand value into values (count x
 * n_candidates), by heuristic play (PLAY_VALUE) or with the last `endgame` tricks solved
 * (PLAY_ENDGAME), or each relative seat's final tricks into tricks (count x n_candidates x 4; 0
 * for a missing fourth seat; PLAY_TRICKS). Returns SEARCH_OK or the last error a world met. */
static int play_worlds(int mode, const i64 *rules, const i64 *position, const i64 *hands, i64 count,
                       const i64 *candidates, i64 n_candidates, double *values, i64 *tricks, i64 threads,
                       int endgame) {
    int status = SEARCH_OK;
#ifdef _OPENMP
#pragma omp parallel for num_threads((int)(threads > 1 ? threads : 1)) schedule(dynamic, 4) if (threads > 1)
#endif
    for (i64 w = 0; w < count; w++) {
        Game g;
        int32_t tables[2][SOLVER_TABLE][SOLVER_TABLE];        /* PLAY_ENDGAME's payoffs */
        int local = game_from_position(&g, rules, position, hands + w * 4);
        if (local == SEARCH_OK && mode == PLAY_ENDGAME) endgame_tables(&g, rules, position, tables);
        for (i64 c = 0; c < n_candidates && local == SEARCH_OK; c++) {
            int card = (int)candidates[c];
            i64 k = w * n_candidates + c;
            if (mode == PLAY_VALUE) {
                values[k] = play_out(&g, rules, position, card, &local);
            } else if (mode == PLAY_ENDGAME) {
                values[k] = play_out_endgame(&g, rules, position, card, endgame,
                                             (const int32_t (*)[SOLVER_TABLE][SOLVER_TABLE])tables, &local);
            } else {
                Game end = g;
                if (!play_to_end(&end, rules, card, &local)) break;
                for (int s = 0; s < 4; s++) tricks[k * 4 + s] = s < end.n ? end.tricks_taken[s] : 0;
            }
        }
        if (local != SEARCH_OK) {
#ifdef _OPENMP
#pragma omp critical
#endif
            status = local;
        }
    }
    (void)threads;
    return status;
}

/* spades_search_playouts with exact endgames: the heuristic plays until `endgame` tricks remain
 * (1..13; from a root with that few left, none), then the solver. The four-seat partnership
 * game only (SEARCH_ERR_ARGS otherwise). */
i64 spades_search_playouts_endgame(const i64 *rules, const i64 *position, const i64 *hands, i64 count,
                                   const i64 *candidates, i64 n_candidates, double *values, i64 threads,
                                   i64 endgame) {
    if (rules[R_PLAYERS] != 4 || !rules[R_PARTNERSHIPS] || endgame < 1 || endgame > 13 ||
        !playout_args_ok(rules, count, candidates, n_candidates))
        return SEARCH_ERR_ARGS;
    return play_worlds(PLAY_ENDGAME, rules, position, hands, count, candidates, n_candidates, values, NULL, threads,
                       (int)endgame);
}

/* Play out every world (count x 4 hands, relative seats) with every candidate card; values
 * (count x n_candidates) receive the observer's hand values. Returns 0 or a SEARCH_ERR_* code. */
i64 spades_search_playouts(const i64 *rules, const i64 *position, const i64 *hands, i64 count, const i64 *candidates,
                           i64 n_candidates, double *values, i64 threads) {
    if (!playout_args_ok(rules, count, candidates, n_candidates)) return SEARCH_ERR_ARGS;
    return play_worlds(PLAY_VALUE, rules, position, hands, count, candidates, n_candidates, values, NULL, threads, 0);
}

/* spades_search_playouts for callers that score the hand themselves (the bid search values a
 * hand by the game: agents/search.py): tricks (count x n_candidates x 4) receive each relative
 * seat's tricks taken at the end of the hand (0 for a missing fourth seat). */
i64 spades_search_playouts_tricks(const i64 *rules, const i64 *position, const i64 *hands, i64 count,
                                  const i64 *candidates, i64 n_candidates, i64 *tricks, i64 threads) {
    if (!playout_args_ok(rules, count, candidates, n_candidates)) return SEARCH_ERR_ARGS;
    return play_worlds(PLAY_TRICKS, rules, position, hands, count, candidates, n_candidates, NULL, tricks, threads, 0);
}
