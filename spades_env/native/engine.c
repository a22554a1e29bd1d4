/* The batched engine's step in C: one table at a time, every rule of SpadesVectorEnv._full_step.
 *
 * This file is a second implementation of spades_env/vector.py's step (the torch code is the
 * reference; tests/test_native.py checks that both give the same states, observations, masks,
 * rewards and ends, step by step, in every partnership preset, the short deck and the free signal
 * among them). It works in place on the
 * engine's own state tensors (int64, contiguous, (B, ...) rows), so everything else of
 * SpadesVectorEnv (reset, observe_seat, state_tensor, snapshots) reads the same state.
 *
 * A step (spades_step_all) runs in two passes so that several threads can share the tables:
 *   spades_step_play(ctx, lo, hi)   the actions of tables lo..hi-1, their rewards and ends, and
 *                                   the observations and masks of those whose hand goes on;
 *                                   returns how many need a new deal;
 *   spades_step_start(ctx, lo, hi, pool_offset)
 *                                   the new hands (deals taken from the pool in table order,
 *                                   from pool_offset on), and their observations and masks.
 * Built by spades_env/native/__init__.py with the system C compiler; loaded with ctypes.
 */
#include <stdint.h>
#include <string.h>

#include "heuristic.h"
#ifdef _OPENMP
#include <omp.h>
#endif
#ifdef __AVX__
#include <immintrin.h>
#endif

typedef int64_t i64;

enum { BLIND_DECISION = 0, BIDDING = 1, PASSING = 2, PLAY = 3, HAND_OVER = 4, SIGNAL = 6 };
enum { SIGNAL_ACTION_BASE = 68 };        /* message m is action 68 + m (spades_env.game) */

/* Rule and layout parameters (int64), in the order of spades_env/native/__init__.py PARAMS. */
enum {
    P_NIL, P_BLIND_NIL, P_BLIND_NIL_MIN_DEFICIT, P_BLIND_NIL_PASS, P_MIN_TEAM_BID, P_HAS_MAX_TEAM_BID,
    P_MAX_TEAM_BID, P_BIDS_MAY_TOTAL_13, P_NO_SPADES_FIRST_TRICK, P_TWO_OF_CLUBS_LEADS, P_SPADES_LEAD,
    P_NIL_TRICKS_COUNT_FOR_PARTNER, P_NIL_BONUS, P_BLIND_NIL_BONUS, P_BAGS, P_BAG_LIMIT, P_BAG_PENALTY,
    P_BAGS_FROM_SCORE_DIGIT, P_TARGET_SCORE, P_HAS_MERCY, P_MERCY_SCORE, P_MAX_HANDS, P_FIXED_DEALER,
    P_EPISODE_HAND, P_REWARD_KIND, P_PASS_SLOTS, P_OBS_SIZE,
    P_O_HAND, P_O_PHASE, P_O_DEALER, P_O_TO_ACT, P_O_BIDS, P_O_PASSED, P_O_RECEIVED, P_O_TRICKS_TAKEN,
    P_O_TRICK_LEADER, P_O_CURRENT_TRICK, P_O_PLAYED, P_O_VOIDS, P_O_SPADES_BROKEN, P_O_SIDES, P_O_GAME,
    P_TRICKS_PER_HAND, P_SIGNALS, P_NUM_ACTIONS, P_O_SIGNAL_PHASE, P_O_MESSAGES,
    P_COUNT
};
/* Double parameters. */
enum { D_REWARD_SCALE, D_WIN_BONUS, D_SHAPING, D_BAG_COST, D_COUNT };
/* The state tensors, then the buffers, in the order of spades_env/native/__init__.py STATE_FIELDS
 * and BUFFERS. */
enum {
    S_HANDS, S_DEAL, S_PHASE, S_TO_ACT, S_DEALER, S_BIDS, S_BLIND, S_LOOKED, S_PASSED, S_RECEIVED,
    S_PASS_FROM, S_PASS_TO, S_PASS_LEN, S_PASS_POS, S_TRICK, S_TRICK_LEN, S_LEADER, S_LED_SUIT,
    S_WIN_CARD, S_WIN_SEAT, S_TRICKS_TAKEN, S_TRICKS_PLAYED, S_PLAYED, S_VOIDS, S_BROKEN, S_SCORES,
    S_BAGS, S_HAND_NUMBER, S_DEAL_INDEX, S_POTENTIAL, S_MESSAGES,
    X_ACTIONS, X_POOL, X_QUEUE, X_START_SCORES, X_START_BAGS, X_FIXED_START_DEALER,
    X_OBS, X_MASK, X_REWARDS, X_DONE, X_FINAL_SCORES, X_WINNER, X_NEED,
    PTR_COUNT
};
/* Sizes (int64): batch, pool rows, queue depth. */
enum { N_BATCH, N_POOL, N_QUEUE, N_COUNT };

enum { REWARD_TEAM_SCORE = 0, REWARD_TEAM_DIFF = 1, REWARD_WIN = 2 };
enum { LEAD_BROKEN = 0, LEAD_ANY = 1, LEAD_FORCED_ONLY = 2 };

/* The observation's shape (spades_env/observation.py): T tricks a hand, N messages, and the first
 * cell of each block from tricks_taken on (the blocks before it never move). The standard game's
 * is STANDARD_SHAPE, whose constants the compiler folds into the observation writer. */
typedef struct {
    i64 tricks, signals, size, actions;
    i64 tricks_taken, trick_leader, current_trick, played, voids, spades_broken, sides, game, signal_phase, messages;
} Shape;

/* The blocks before tricks_taken, the same in every four-player partnership layout. */
enum { O_HAND = 0, O_PHASE = 52, O_DEALER = 58, O_TO_ACT = 62, O_BIDS = 66, O_PASSED = 126, O_RECEIVED = 178,
       O_TRICKS_TAKEN = 230 };

/* The layout of T tricks a hand and N messages, block after block as observation.py lays it out. */
static Shape shape_of(i64 tricks, i64 signals) {
    Shape s;
    s.tricks = tricks;
    s.signals = signals;
    s.actions = SIGNAL_ACTION_BASE + signals;
    s.tricks_taken = O_TRICKS_TAKEN;
    s.trick_leader = s.tricks_taken + 4 * (tricks + 1);
    s.current_trick = s.trick_leader + 4;
    s.played = s.current_trick + 4 * 52;
    s.voids = s.played + 4 * 52;
    s.spades_broken = s.voids + 16;
    s.sides = s.spades_broken + 1;
    s.game = s.sides + 14;
    s.signal_phase = signals ? s.game + 5 : 0;
    s.messages = signals ? s.game + 6 : 0;
    s.size = s.game + 5 + (signals ? 1 + 4 * signals : 0);
    return s;
}

static const Shape STANDARD_SHAPE = {13, 0, 742, 68, 230, 286, 290, 498, 706, 722, 723, 737, 0, 0};

typedef struct {
    const i64 *p;
    const double *d;
    void *const *ptr;
    const i64 *n;
    float game[4];     /* the observation's first four game cells: the same for every table */
    Shape shape;       /* the observation's (and the mask's) shape */
    int standard;      /* 1: it is STANDARD_SHAPE (13 tricks, no signal) */
} Ctx;

static inline Ctx make_ctx(const i64 *params, const double *dparams, void *const *ptrs, const i64 *sizes) {
    Ctx c = {params, dparams, ptrs, sizes, {0}, shape_of(params[P_TRICKS_PER_HAND], params[P_SIGNALS]), 0};
    c.standard = params[P_TRICKS_PER_HAND] == 13 && params[P_SIGNALS] == 0;
    c.game[0] = (float)((double)params[P_TARGET_SCORE] / 1000.0);
    c.game[1] = params[P_HAS_MERCY] ? (float)((double)params[P_MERCY_SCORE] / 1000.0) : 0.0f;
    c.game[2] = params[P_HAS_MERCY] ? 1.0f : 0.0f;
    c.game[3] = (float)((double)params[P_BAG_LIMIT] / 100.0);
    return c;
}

#define I(name) ((i64 *)c->ptr[name])
#define SUIT_MASK(s) (((i64)0x1FFF) << (13 * (s)))

int spades_native_counts(i64 *out) {
    out[0] = P_COUNT;
    out[1] = D_COUNT;
    out[2] = PTR_COUNT;
    out[3] = N_COUNT;
    return 0;
}

static inline i64 suit_of(i64 card) { return (card >= 13) + (card >= 26) + (card >= 39); }

static inline i64 clampi(i64 v, i64 lo, i64 hi) { return v < lo ? lo : (v > hi ? hi : v); }

/* 1 where the side may bid blind nil (it trails by at least the deficit). */
static inline i64 side_may_blind(const Ctx *c, const i64 *scores, int side) {
    if (!c->p[P_BLIND_NIL]) return 0;
    return scores[1 - side] - scores[side] >= c->p[P_BLIND_NIL_MIN_DEFICIT];
}

/* Bit b set where `seat` may bid b (0 = nil, at most the T tricks of a hand). */
static i64 legal_bid_bits(const Ctx *c, const i64 *bids, i64 seat, i64 dealer) {
    const i64 *p = c->p;
    const i64 T = p[P_TRICKS_PER_HAND];
    i64 partner_bid = bids[(seat + 2) & 3];
    int has_partner = partner_bid >= 0;
    i64 low = 1, high = T, nil_ok = p[P_NIL];
    if (p[P_MIN_TEAM_BID]) {
        if (has_partner) {
            low = p[P_MIN_TEAM_BID] - partner_bid;
            if (low < 1) low = 1;
        }
        nil_ok = nil_ok * (!has_partner || partner_bid >= p[P_MIN_TEAM_BID]);
    }
    if (p[P_HAS_MAX_TEAM_BID]) {
        if (has_partner) {
            high = p[P_MAX_TEAM_BID] - partner_bid;
            if (high > T) high = T;
        } else {
            high = p[P_MAX_TEAM_BID] - (p[P_NIL] ? 0 : 1);
            if (high > T) high = T;
        }
    }
    low = clampi(low, 1, 14);
    i64 legal = (high >= low ? ((i64)1 << (clampi(high, 0, T) + 1)) - ((i64)1 << low) : 0) | nil_ok;
    if (!p[P_BIDS_MAY_TOTAL_13]) {
        i64 others = 0;
        for (int i = 0; i < 4; i++)
            if (i != seat && bids[i] > 0) others += bids[i];
        i64 forbidden = T - others;                  /* the bids may not total the tricks of a hand */
        i64 hit = (seat == dealer && forbidden >= 0 && forbidden <= T) ? ((i64)1 << forbidden) : 0;
        i64 without = legal & ~hit;
        if (without) legal = without;
    }
    return legal;
}

/* At to_act's bidding turn: offer blind nil, or show its cards. */
static void begin_bidding_turn(const Ctx *c, i64 b) {
    i64 seat = I(S_TO_ACT)[b];
    i64 *looked = I(S_LOOKED) + 4 * b;
    i64 side_may = side_may_blind(c, I(S_SCORES) + 2 * b, (int)(seat & 1));
    i64 nil_legal = legal_bid_bits(c, I(S_BIDS) + 4 * b, seat, I(S_DEALER)[b]) & 1;
    int offer = looked[seat] == 0 && side_may == 1 && nil_legal == 1;
    int show = looked[seat] == 0 && !offer;
    if (show) looked[seat] = 1;
    I(S_PHASE)[b] = offer ? BLIND_DECISION : BIDDING;
}

/* Bitboard of the cards the player to act may play or pass (0 in other phases). */
static i64 legal_cards(const Ctx *c, i64 b) {
    const i64 *p = c->p;
    i64 phase = I(S_PHASE)[b];
    i64 hand = I(S_HANDS)[4 * b + I(S_TO_ACT)[b]];
    if (phase == PASSING) return hand;
    if (phase != PLAY) return 0;
    i64 non_spades = hand & ~SUIT_MASK(3);
    int has_non_spades = non_spades != 0;
    int first_trick = I(S_TRICKS_PLAYED)[b] == 0;
    if (I(S_TRICK_LEN)[b] > 0) {
        i64 follow = hand & SUIT_MASK(clampi(I(S_LED_SUIT)[b], 0, 3));
        i64 follow_legal = follow ? follow : hand;
        if (p[P_NO_SPADES_FIRST_TRICK] && follow == 0 && first_trick && has_non_spades) follow_legal = non_spades;
        return follow_legal;
    }
    int restrict_ = 0;
    if (p[P_SPADES_LEAD] == LEAD_BROKEN) restrict_ = I(S_BROKEN)[b] == 0;
    else if (p[P_SPADES_LEAD] == LEAD_FORCED_ONLY) restrict_ = 1;
    if (p[P_NO_SPADES_FIRST_TRICK]) restrict_ = restrict_ || first_trick;
    i64 lead_legal = (restrict_ && has_non_spades) ? non_spades : hand;
    if (p[P_TWO_OF_CLUBS_LEADS] && first_trick && (hand & 1)) lead_legal = 1;
    return lead_legal;
}

/* Tricks counting toward each side's contract, and the contract. */
static void counted_and_contract(const Ctx *c, i64 b, i64 counted[2], i64 contract[2]) {
    const i64 *bids = I(S_BIDS) + 4 * b, *taken = I(S_TRICKS_TAKEN) + 4 * b;
    for (int side = 0; side < 2; side++) {
        counted[side] = contract[side] = 0;
        for (int m = side; m < 4; m += 2) {
            i64 counts = c->p[P_NIL_TRICKS_COUNT_FOR_PARTNER] ? 1 : bids[m] != 0;
            counted[side] += taken[m] * counts;
            contract[side] += bids[m] > 0 ? bids[m] : 0;
        }
    }
}

/* Points and bags after, per side, if the hand were scored now: spades_env/scoring.py score_side
 * (the reference), as spades_env/vector.py SpadesVectorEnv._score_hand does it in torch; search.c
 * side_points is the play-outs' copy. tests/test_scoring_twins.py checks all four agree. */
static void score_hand(const Ctx *c, i64 b, i64 points[2], i64 bags_after[2]) {
    const i64 *p = c->p;
    const i64 *bids = I(S_BIDS) + 4 * b, *taken = I(S_TRICKS_TAKEN) + 4 * b, *blind = I(S_BLIND) + 4 * b;
    const i64 *scores = I(S_SCORES) + 2 * b, *bags = I(S_BAGS) + 2 * b;
    for (int side = 0; side < 2; side++) {
        i64 contract = 0, nil_points = 0, counted = 0, nil_bags = 0;
        for (int m = side; m < 4; m += 2) {
            int is_nil = bids[m] == 0;
            contract += bids[m] > 0 ? bids[m] : 0;
            i64 nil_value = blind[m] == 1 ? p[P_BLIND_NIL_BONUS] : p[P_NIL_BONUS];
            if (is_nil) nil_points += taken[m] == 0 ? nil_value : -nil_value;
            if (p[P_NIL_TRICKS_COUNT_FOR_PARTNER]) counted += taken[m];
            else if (is_nil) nil_bags += taken[m];
            else counted += taken[m];
        }
        int made = counted >= contract;
        i64 contract_points = made ? 10 * contract : -10 * contract;
        if (!p[P_BAGS]) {
            points[side] = contract_points + nil_points;
            bags_after[side] = 0;
            continue;
        }
        i64 over = made ? counted - contract : 0;
        i64 bags_taken = over + nil_bags;
        if (p[P_BAGS_FROM_SCORE_DIGIT]) {
            i64 counter = scores[side] % 10 + bags_taken;          /* torch.fmod: C's remainder */
            i64 penalties = counter > 0 ? counter / 10 : 0;
            points[side] = contract_points + over + nil_points - p[P_BAG_PENALTY] * penalties;
            bags_after[side] = (scores[side] + points[side]) % 10;
        } else {
            i64 counter = bags[side] + bags_taken;                 /* never negative */
            i64 penalties = counter / p[P_BAG_LIMIT];
            points[side] = contract_points + over + nil_points - p[P_BAG_PENALTY] * penalties;
            bags_after[side] = counter - penalties * p[P_BAG_LIMIT];
        }
    }
}

/* Phi per side, in points (spades_env.rewards). */
static void potential(const Ctx *c, i64 b, double phi[2]) {
    const i64 *bids = I(S_BIDS) + 4 * b, *taken = I(S_TRICKS_TAKEN) + 4 * b, *blind = I(S_BLIND) + 4 * b;
    i64 counted[2], contract[2];
    counted_and_contract(c, b, counted, contract);
    for (int side = 0; side < 2; side++) {
        i64 nil_loss = 0;
        for (int m = side; m < 4; m += 2)
            if (bids[m] == 0 && taken[m] > 0) nil_loss += blind[m] == 1 ? c->p[P_BLIND_NIL_BONUS] : c->p[P_NIL_BONUS];
        i64 least = counted[side] < contract[side] ? counted[side] : contract[side];
        phi[side] = (double)(10 * least - nil_loss);
    }
}

/* Per side -> per seat, combined like the reward scheme (added to rewards). */
static inline void add_per_seat(const Ctx *c, double *rewards, const double side[2]) {
    double v0 = side[0], v1 = side[1];
    if (c->p[P_REWARD_KIND] != REWARD_TEAM_SCORE) {
        v0 = side[0] - side[1];
        v1 = side[1] - side[0];
    }
    rewards[0] = rewards[0] + v0;
    rewards[1] = rewards[1] + v1;
    rewards[2] = rewards[2] + v0;
    rewards[3] = rewards[3] + v1;
}

/* The blind-nil passing order if the bidding ended now. Returns its length. */
static i64 pass_queue(const Ctx *c, i64 b, i64 *froms, i64 *tos) {
    i64 k = c->p[P_BLIND_NIL_PASS], Q = c->p[P_PASS_SLOTS];
    for (i64 i = 0; i < Q; i++) froms[i] = tos[i] = 0;
    if (k == 0 || !c->p[P_BLIND_NIL]) return 0;
    const i64 *blind = I(S_BLIND) + 4 * b;
    i64 dealer = I(S_DEALER)[b];
    int active[2];
    i64 bidder[2], partner[2], order[2];
    for (int side = 0; side < 2; side++) {
        active[side] = blind[side] + blind[side + 2] == 1;
        bidder[side] = (blind[side] == 1 ? 0 : 1) * 2 + side;
        partner[side] = (bidder[side] + 2) & 3;
        order[side] = (bidder[side] - dealer - 1) & 3;
    }
    int first = (!active[1] || (active[0] && order[0] < order[1])) ? 0 : 1;
    int second = 1 - first;
    for (i64 i = 0; i < k; i++) {
        froms[i] = partner[first];
        froms[k + i] = bidder[first];
        tos[i] = bidder[first];
        tos[k + i] = partner[first];
        if (active[second]) {
            froms[2 * k + i] = partner[second];
            froms[3 * k + i] = bidder[second];
            tos[2 * k + i] = bidder[second];
            tos[3 * k + i] = partner[second];
        }
    }
    return 2 * k * (active[0] + active[1]);
}

/* One action at table b; sets need (a new hand) and done (the episode ended: the new hand
 * starts a new game); writes rewards, final scores and winner. */
static void play_one(const Ctx *c, i64 b) {
    const i64 *p = c->p;
    const i64 Q = p[P_PASS_SLOTS];
    i64 a = I(X_ACTIONS)[b];
    i64 phase = I(S_PHASE)[b], seat = I(S_TO_ACT)[b];
    i64 *hands = I(S_HANDS) + 4 * b;
    int is_play = phase == PLAY, is_bid = phase == BIDDING, is_blind = phase == BLIND_DECISION,
        is_pass = phase == PASSING;
    i64 card = clampi(a, 0, 51), bit = (i64)1 << card;
    int trick_done = 0, hand_done = 0;
    i64 next_in_play = 0;

    /* -- play a card */
    if (is_play) {
        i64 *trick = I(S_TRICK) + 4 * b;
        hands[seat] ^= bit;
        I(S_PLAYED)[4 * b + seat] |= bit;
        i64 suit = suit_of(card);
        int leading = I(S_TRICK_LEN)[b] == 0;
        i64 led = leading ? suit : I(S_LED_SUIT)[b];
        if (!leading && suit != led) I(S_VOIDS)[4 * b + seat] |= (i64)1 << led;
        i64 win_card = I(S_WIN_CARD)[b];
        int beats = leading || (suit == suit_of(win_card) && card > win_card) || (suit == 3 && win_card < 39);
        if (beats) {
            I(S_WIN_CARD)[b] = card;
            I(S_WIN_SEAT)[b] = seat;
        }
        trick[seat] = card;
        i64 trick_len = I(S_TRICK_LEN)[b] + 1;
        if (leading) I(S_LEADER)[b] = seat;
        if (suit == 3) I(S_BROKEN)[b] = 1;
        I(S_LED_SUIT)[b] = led;
        i64 win_seat = I(S_WIN_SEAT)[b];
        trick_done = trick_len == 4;
        if (trick_done) {
            I(S_TRICKS_TAKEN)[4 * b + win_seat] += 1;
            I(S_TRICKS_PLAYED)[b] += 1;
            hand_done = I(S_TRICKS_PLAYED)[b] == p[P_TRICKS_PER_HAND];
            for (int i = 0; i < 4; i++) trick[i] = -1;
            trick_len = 0;
            I(S_LEADER)[b] = win_seat;
        }
        I(S_TRICK_LEN)[b] = trick_len;
        next_in_play = trick_done ? win_seat : (seat + 1) & 3;
    }

    /* -- passing a card */
    int passing_over = 0;
    i64 next_passer = 0;
    if (is_pass) {
        i64 pos = I(S_PASS_POS)[b];
        i64 to = I(S_PASS_TO)[Q * b + (pos < Q - 1 ? pos : Q - 1)];
        hands[seat] ^= bit;
        hands[to] |= bit;
        I(S_PASSED)[4 * b + seat] |= bit;
        I(S_RECEIVED)[4 * b + to] |= bit;
        pos += 1;
        I(S_PASS_POS)[b] = pos;
        passing_over = pos >= I(S_PASS_LEN)[b];
        next_passer = I(S_PASS_FROM)[Q * b + (pos < Q - 1 ? pos : Q - 1)];
    }

    /* -- bids and the blind-nil decision */
    int makes_bid = is_bid || (is_blind && a == 66);
    int looks = is_blind && a == 67;
    if (makes_bid) I(S_BIDS)[4 * b + seat] = is_blind ? 0 : a - 52;
    if (is_blind && a == 66) I(S_BLIND)[4 * b + seat] = 1;
    if (looks) I(S_LOOKED)[4 * b + seat] = 1;
    int bidding_over = makes_bid && seat == I(S_DEALER)[b];
    int starts_passing = 0, play_starts = passing_over;
    i64 froms[64], tos[64];                 /* the rules cap blind_nil_pass at 3: at most 12 slots */
    if (bidding_over) {
        for (int i = 0; i < 4; i++) I(S_LOOKED)[4 * b + i] = 1;
        i64 len = pass_queue(c, b, froms, tos);
        starts_passing = len > 0;
        if (starts_passing) {
            memcpy(I(S_PASS_FROM) + Q * b, froms, Q * sizeof(i64));
            memcpy(I(S_PASS_TO) + Q * b, tos, Q * sizeof(i64));
            I(S_PASS_LEN)[b] = len;
            I(S_PASS_POS)[b] = 0;
        } else {
            play_starts = 1;
        }
    }
    i64 first_leader = (I(S_DEALER)[b] + 1) & 3;
    if (p[P_TWO_OF_CLUBS_LEADS]) {
        first_leader = 0;
        for (int i = 0; i < 4; i++)
            if (hands[i] & 1) {
                first_leader = i;
                break;
            }
    }

    /* -- a message (the free signal): the dealer's is the last, then the first bidder's turn */
    int is_signal = phase == SIGNAL, signal_over = is_signal && seat == I(S_DEALER)[b];
    if (is_signal) I(S_MESSAGES)[4 * b + seat] = a - SIGNAL_ACTION_BASE;

    /* -- who acts next, in which phase */
    i64 to_act = is_play ? next_in_play : seat;
    if (is_signal) to_act = (seat + 1) & 3;            /* after the dealer: its left, the first bidder */
    if (makes_bid && !bidding_over) to_act = (seat + 1) & 3;
    if (starts_passing) to_act = froms[0];
    if (is_pass && !passing_over) to_act = next_passer;
    if (play_starts) to_act = first_leader;
    i64 new_phase = looks ? BIDDING : phase;
    if (starts_passing) new_phase = PASSING;
    if (play_starts) {
        new_phase = PLAY;
        I(S_LEADER)[b] = first_leader;
        I(S_LED_SUIT)[b] = 0;
    }
    I(S_TO_ACT)[b] = to_act;
    I(S_PHASE)[b] = new_phase;
    if ((makes_bid && !bidding_over) || signal_over) begin_bidding_turn(c, b);

    /* -- rewards: shaping after tricks, scores after the last trick */
    double *rewards = (double *)c->ptr[X_REWARDS] + 4 * b;
    rewards[0] = rewards[1] = rewards[2] = rewards[3] = 0.0;
    i64 *scores = I(S_SCORES) + 2 * b, *bags = I(S_BAGS) + 2 * b;
    int episode_over = 0;
    i64 winner = -1;
    if (hand_done) {
        i64 points[2], bags_after[2];
        score_hand(c, b, points, bags_after);
        /* bag_cost prices the change of the carried counter (spades_env.rewards) */
        double carried[2] = {(double)(bags_after[0] - bags[0]), (double)(bags_after[1] - bags[1])};
        scores[0] += points[0];
        scores[1] += points[1];
        bags[0] = bags_after[0];
        bags[1] = bags_after[1];
        int reached = scores[0] >= p[P_TARGET_SCORE] || scores[1] >= p[P_TARGET_SCORE];
        if (p[P_HAS_MERCY]) reached = reached || scores[0] <= p[P_MERCY_SCORE] || scores[1] <= p[P_MERCY_SCORE];
        int unique = scores[0] != scores[1];
        i64 leader = unique ? (scores[1] > scores[0] ? 1 : 0) : -1;
        int game_over = reached && unique;
        int truncated = p[P_MAX_HANDS] && !game_over && I(S_HAND_NUMBER)[b] >= p[P_MAX_HANDS];
        int ends = game_over || truncated;
        i64 game_winner = ends ? leader : -1;
        if (p[P_REWARD_KIND] != REWARD_WIN) {
            double side[2] = {((double)points[0] - c->d[D_BAG_COST] * carried[0]) * c->d[D_REWARD_SCALE],
                              ((double)points[1] - c->d[D_BAG_COST] * carried[1]) * c->d[D_REWARD_SCALE]};
            add_per_seat(c, rewards, side);
        }
        if (ends && (p[P_REWARD_KIND] == REWARD_WIN || c->d[D_WIN_BONUS] != 0.0)) {
            double v0 = game_winner < 0 ? 0.0 : (game_winner == 0 ? 1.0 : -1.0);
            double v1 = game_winner < 0 ? 0.0 : (game_winner == 1 ? 1.0 : -1.0);
            if (p[P_REWARD_KIND] != REWARD_WIN) {
                v0 = c->d[D_WIN_BONUS] * v0;
                v1 = c->d[D_WIN_BONUS] * v1;
            }
            rewards[0] = rewards[0] + v0;
            rewards[1] = rewards[1] + v1;
            rewards[2] = rewards[2] + v0;
            rewards[3] = rewards[3] + v1;
        }
        episode_over = ends || p[P_EPISODE_HAND];
        if (episode_over) winner = game_winner;
        else if (p[P_FIXED_DEALER] < 0) I(S_DEALER)[b] = (I(S_DEALER)[b] + 1) & 3;
    }
    if (c->d[D_SHAPING] > 0 && trick_done) {
        double *pot = (double *)c->ptr[S_POTENTIAL] + 2 * b;
        double fresh[2] = {0.0, 0.0};
        if (!hand_done) potential(c, b, fresh);
        double w = c->d[D_SHAPING] * c->d[D_REWARD_SCALE];
        double delta[2] = {(fresh[0] - pot[0]) * w, (fresh[1] - pot[1]) * w};
        add_per_seat(c, rewards, delta);
        pot[0] = fresh[0];
        pot[1] = fresh[1];
    }
    I(X_FINAL_SCORES)[2 * b] = scores[0];
    I(X_FINAL_SCORES)[2 * b + 1] = scores[1];
    I(X_WINNER)[b] = winner;
    ((uint8_t *)c->ptr[X_DONE])[b] = (uint8_t)episode_over;
    ((uint8_t *)c->ptr[X_NEED])[b] = (uint8_t)hand_done;
}

/* Deal a new hand at table b (deal `pool_row` of the pool unless its queue has one). */
static void start_one(const Ctx *c, i64 b, i64 pool_row) {
    const i64 *p = c->p;
    i64 P = c->n[N_POOL], H = c->n[N_QUEUE];
    const i64 *pooled = I(X_POOL) + 5 * clampi(pool_row, 0, P - 1);
    const i64 *deal = pooled;
    i64 *deal_index = I(S_DEAL_INDEX) + b;
    if (H > 0 && *deal_index < H) deal = I(X_QUEUE) + 4 * (H * b + *deal_index);
    i64 first_dealer = pooled[4];
    if (p[P_FIXED_DEALER] >= 0) first_dealer = p[P_FIXED_DEALER];
    else if (c->ptr[X_FIXED_START_DEALER]) first_dealer = I(X_FIXED_START_DEALER)[b];
    i64 *scores = I(S_SCORES) + 2 * b;
    if (((uint8_t *)c->ptr[X_DONE])[b]) {          /* the episode ended: a new game */
        scores[0] = I(X_START_SCORES)[2 * b];
        scores[1] = I(X_START_SCORES)[2 * b + 1];
        I(S_BAGS)[2 * b] = I(X_START_BAGS)[2 * b];
        I(S_BAGS)[2 * b + 1] = I(X_START_BAGS)[2 * b + 1];
        I(S_HAND_NUMBER)[b] = 0;
        I(S_DEALER)[b] = first_dealer;
    }
    i64 may[2] = {side_may_blind(c, scores, 0), side_may_blind(c, scores, 1)};
    for (int i = 0; i < 4; i++) {
        i64 j = 4 * b + i;
        I(S_HANDS)[j] = I(S_DEAL)[j] = deal[i];
        I(S_BIDS)[j] = -1;
        I(S_BLIND)[j] = 0;
        I(S_LOOKED)[j] = 1 - may[i & 1];
        I(S_PASSED)[j] = I(S_RECEIVED)[j] = 0;
        I(S_TRICK)[j] = -1;
        I(S_TRICKS_TAKEN)[j] = 0;
        I(S_PLAYED)[j] = 0;
        I(S_VOIDS)[j] = 0;
        I(S_MESSAGES)[j] = -1;
    }
    I(S_PASS_LEN)[b] = I(S_PASS_POS)[b] = 0;
    I(S_TRICK_LEN)[b] = 0;
    I(S_TRICKS_PLAYED)[b] = 0;
    I(S_BROKEN)[b] = 0;
    I(S_HAND_NUMBER)[b] += 1;
    *deal_index += 1;
    i64 leader0 = (I(S_DEALER)[b] + 1) & 3;
    I(S_TO_ACT)[b] = I(S_LEADER)[b] = leader0;
    double *pot = (double *)c->ptr[S_POTENTIAL] + 2 * b;
    pot[0] = pot[1] = 0.0;
    if (p[P_SIGNALS]) {            /* the messages first; the first bidder's turn begins after them */
        I(S_PHASE)[b] = SIGNAL;
        return;
    }
    I(S_PHASE)[b] = BIDDING;
    begin_bidding_turn(c, b);
}

/* Byte value -> its 8 bits as 0/1 floats, and as 0/1 bytes (filled by spades_native_init). */
static float BITS_F32[256][8];
static uint64_t BITS_U8[256];
static float THIRTEENTHS[27];                   /* k / 13 as ratio() gives it */

/* Called once when the library is loaded, before any step. */
void spades_native_init(void) {
    for (int v = 0; v < 256; v++) {
        uint64_t bytes = 0;
        for (int k = 0; k < 8; k++) {
            BITS_F32[v][k] = (float)((v >> k) & 1);
            bytes |= (uint64_t)((v >> k) & 1) << (8 * k);
        }
        BITS_U8[v] = bytes;   /* little-endian: byte k is bit k */
    }
    for (int k = 0; k < 27; k++) THIRTEENTHS[k] = (float)((double)k / 13.0);
}

/* The observation is built in two steps: first its 0/1 cells as a bit vector (cell i is bit i),
 * then the whole row written from it in one sequential pass (with AVX2, 32 cells from each
 * 32-bit word); the few fractional cells (sides, game) are written over it last. */
#define OBS_WORDS 16                       /* room for 1,024 cells (the observation has 742) */

/* ORs the low bits of v (up to 64 cells) into the bit vector from cell `at` on. */
static inline void put_bits(uint64_t *words, i64 at, uint64_t v) {
    int shift = (int)(at & 63);
    i64 i = at >> 6;
    words[i] |= v << shift;
    if (shift) words[i + 1] |= v >> (64 - shift);
}

static inline float ratio(i64 num, i64 den) { return (float)((double)num / (double)den); }

/* Writes the row's n cells as 0/1 floats from the bit vector (bit i is cell i). */
static inline void expand_bits(float *o, const uint64_t *words, i64 n) {
    const uint32_t *quads = (const uint32_t *)words;     /* little-endian: 32-bit word q holds cells 32q.. */
    i64 i = 0;
#ifdef __AVX2__
    const __m256i bit0 = _mm256_setr_epi32(1 << 0, 1 << 1, 1 << 2, 1 << 3, 1 << 4, 1 << 5, 1 << 6, 1 << 7);
    const __m256i bit1 = _mm256_slli_epi32(bit0, 8), bit2 = _mm256_slli_epi32(bit0, 16);
    const __m256i bit3 = _mm256_slli_epi32(bit0, 24);
    const __m256 one = _mm256_set1_ps(1.0f);
#define CELLS8(at, bit) _mm256_storeu_ps(o + (at), _mm256_and_ps(one, _mm256_castsi256_ps( \
        _mm256_cmpeq_epi32(_mm256_and_si256(quad, bit), bit))))
    for (; i + 32 <= n; i += 32) {                       /* 32 cells from one 32-bit word */
        __m256i quad = _mm256_set1_epi32((int)quads[i >> 5]);
        CELLS8(i, bit0);
        CELLS8(i + 8, bit1);
        CELLS8(i + 16, bit2);
        CELLS8(i + 24, bit3);
    }
#undef CELLS8
#endif
    const uint8_t *bytes = (const uint8_t *)words;
    for (; i + 8 <= n; i += 8) memcpy(o + i, BITS_F32[bytes[i >> 3]], 8 * sizeof(float));
    for (; i < n; i++) o[i] = (float)((bytes[i >> 3] >> (i & 7)) & 1);
}

/* 1 when the layout in params (o_* and obs_size, for its tricks a hand and messages) is the one
 * shape_of derives, block for block: the observation writer below is built on it. */
int spades_native_check_layout(const i64 *p) {
    i64 tricks = p[P_TRICKS_PER_HAND], signals = p[P_SIGNALS];
    if (tricks < 2 || tricks > 13 || signals < 0 || signals > 16) return 0;
    Shape s = shape_of(tricks, signals);
    const i64 expected[] = {O_HAND, O_PHASE, O_DEALER, O_TO_ACT, O_BIDS, O_PASSED, O_RECEIVED, s.tricks_taken,
                            s.trick_leader, s.current_trick, s.played, s.voids, s.spades_broken, s.sides, s.game};
    for (int k = 0; k <= P_O_GAME - P_O_HAND; k++)
        if (p[P_O_HAND + k] != expected[k]) return 0;
    if (s.size > 64 * OBS_WORDS || s.actions > 128) return 0;
    return p[P_OBS_SIZE] == s.size && p[P_NUM_ACTIONS] == s.actions && p[P_O_SIGNAL_PHASE] == s.signal_phase
           && p[P_O_MESSAGES] == s.messages;
}

#define CARDS ((((uint64_t)1) << 52) - 1)
#define ONE ((uint64_t)1)

/* The legal actions of the player to act at table b as bits: actions 0..63 in *low, 64.. in *high
 * (64..67: the blind-nil decision; 68..68+N-1: the messages). */
static inline void legal_actions(const Ctx *c, i64 b, uint64_t *low, uint64_t *high) {
    i64 phase = I(S_PHASE)[b];
    *low = (uint64_t)legal_cards(c, b) & CARDS;
    *high = 0;
    if (phase == BIDDING) {
        uint64_t bid_bits = (uint64_t)legal_bid_bits(c, I(S_BIDS) + 4 * b, I(S_TO_ACT)[b], I(S_DEALER)[b]);
        *low |= bid_bits << 52;
        *high = bid_bits >> 12;
    } else if (phase == BLIND_DECISION) {
        *high = 3 << 2;
    } else if (phase == SIGNAL) {
        *high = ((ONE << c->p[P_SIGNALS]) - 1) << (SIGNAL_ACTION_BASE - 64);
    }
}

/* k / T as the observation writes it (ratio(), through the table for the standard 13). */
static inline float per_trick(i64 k, i64 tricks) {
    if (tricks == 13) return k >= 0 && k <= 26 ? THIRTEENTHS[k] : ratio(k, 13);
    return ratio(k, tricks);
}

/* The observation and mask of the player to act at table b, in the shape S. Always inlined: for
 * STANDARD_SHAPE every offset below is a constant and the bit vector stays in registers. */
static inline __attribute__((always_inline)) void observe_shape(const Ctx *c, i64 b, const Shape S) {
    const i64 *p = c->p;
    float *o = (float *)c->ptr[X_OBS] + S.size * b;
    uint64_t w[OBS_WORDS] = {0};
    i64 f = I(S_TO_ACT)[b], phase = I(S_PHASE)[b];
    int over = phase == HAND_OVER || phase == HAND_OVER + 1;          /* (the signal phase, 6, is not) */
    const i64 *bids = I(S_BIDS) + 4 * b, *blind = I(S_BLIND) + 4 * b, *taken = I(S_TRICKS_TAKEN) + 4 * b;
    const i64 *trick = I(S_TRICK) + 4 * b, *played = I(S_PLAYED) + 4 * b, *voids = I(S_VOIDS) + 4 * b;
    put_bits(w, O_HAND, (uint64_t)(I(S_HANDS)[4 * b + f] * I(S_LOOKED)[4 * b + f]) & CARDS);
    uint64_t turn = ONE << (O_DEALER - O_PHASE + ((I(S_DEALER)[b] - f) & 3));   /* phase, dealer, to_act */
    if (phase >= 0 && phase < 6) turn |= ONE << phase;
    if (!over) turn |= ONE << (O_TO_ACT - O_PHASE + ((I(S_TO_ACT)[b] - f) & 3));
    put_bits(w, O_PHASE, turn);
    put_bits(w, O_PASSED, (uint64_t)I(S_PASSED)[4 * b + f] & CARDS);
    put_bits(w, O_RECEIVED, (uint64_t)I(S_RECEIVED)[4 * b + f] & CARDS);
    if (phase == PLAY) {
        i64 leader = I(S_TRICK_LEN)[b] > 0 ? I(S_LEADER)[b] : I(S_TO_ACT)[b];
        put_bits(w, S.trick_leader, ONE << ((leader - f) & 3));
    }
    uint64_t bid_cells = 0, taken_cells = 0, message_cells = 0;
    uint64_t void_cells = I(S_BROKEN)[b] ? ONE << (S.spades_broken - S.voids) : 0;
    const i64 *messages = I(S_MESSAGES) + 4 * b;
    /* the four seats from the observer's, r = 0..3, written out so that the offsets stay constant */
#define SEAT(r)                                                                                              \
    {                                                                                                        \
        i64 s = (f + (r)) & 3;                                                                               \
        if (bids[s] >= 0 && bids[s] < 14) bid_cells |= ONE << (15 * (r) + bids[s]);                         \
        if (blind[s] == 1) bid_cells |= ONE << (15 * (r) + 14);                                              \
        if (taken[s] >= 0 && taken[s] <= S.tricks) taken_cells |= ONE << ((S.tricks + 1) * (r) + taken[s]); \
        if (trick[s] >= 0 && trick[s] < 52) put_bits(w, S.current_trick + 52 * (r), ONE << trick[s]);        \
        put_bits(w, S.played + 52 * (r), (uint64_t)played[s] & CARDS);                                       \
        void_cells |= (uint64_t)(voids[s] & 15) << (4 * (r));                                                \
        if (S.signals && messages[s] >= 0 && messages[s] < S.signals)                                        \
            message_cells |= ONE << (S.signals * (r) + messages[s]);                                         \
    }
    SEAT(0) SEAT(1) SEAT(2) SEAT(3)
#undef SEAT
    put_bits(w, O_BIDS, bid_cells);
    put_bits(w, S.tricks_taken, taken_cells);
    put_bits(w, S.voids, void_cells);      /* the spades_broken cell right after the voids */
    if (S.signals) {                       /* after the game block: signal_phase, then the messages */
        put_bits(w, S.signal_phase, phase == SIGNAL);
        put_bits(w, S.messages, message_cells);
    }
    expand_bits(o, w, S.size);
    /* the fractional cells; sides: own side first */
    const i64 *scores = I(S_SCORES) + 2 * b, *bags = I(S_BAGS) + 2 * b;
    i64 counted[2], contract[2];
    counted_and_contract(c, b, counted, contract);
    i64 target = p[P_TARGET_SCORE];
    for (int j = 0; j < 2; j++) {
        int side = (int)((f & 1) ^ j);
        float *cell = o + S.sides + 7 * j;
        cell[0] = ratio(scores[side], target);
        cell[1] = ratio(bags[side], p[P_BAG_LIMIT]);
        cell[2] = ratio(target - scores[side], target);
        cell[3] = p[P_HAS_MERCY] ? ratio(scores[side] - p[P_MERCY_SCORE], target) : 0.0f;
        cell[4] = (float)side_may_blind(c, scores, side);
        cell[5] = per_trick(counted[side], S.tricks);
        cell[6] = per_trick(contract[side], S.tricks);
    }
    float *game = o + S.game;
    memcpy(game, c->game, sizeof c->game);
    game[4] = p[P_MAX_HANDS] ? ratio(I(S_HAND_NUMBER)[b] - !over, p[P_MAX_HANDS]) : 0.0f;

    /* the mask: 68 (+ N) actions as bits (52 cards, 14 bids, blind nil, look, the messages), then one byte each */
    uint64_t low, high;
    legal_actions(c, b, &low, &high);
    uint8_t *m = (uint8_t *)c->ptr[X_MASK] + S.actions * b;
#ifdef __AVX2__
    /* each byte of a 32-bit half spread over 8 bytes, then each of those bytes keeps its own bit */
    const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
                                            2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ULL), one = _mm256_set1_epi8(1);
    for (int half = 0; half < 2; half++) {
        __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32((int)(uint32_t)(low >> (32 * half))), spread);
        _mm256_storeu_si256((__m256i *)(m + 32 * half), _mm256_min_epu8(_mm256_and_si256(bytes, bit), one));
    }
#else
    for (int i = 0; i < 8; i++) memcpy(m + 8 * i, &BITS_U8[(low >> (8 * i)) & 255], 8);
#endif
    for (int k = 0; k < S.actions - 64; k++) m[64 + k] = (high >> k) & 1;
}

/* The same writer on the env's shape (the short deck, the free signal): a function of its own, so
 * that the standard game's, inlined in observe_one, is compiled as it would be alone. */
static __attribute__((noinline)) void observe_other_shape(const Ctx *c, i64 b) { observe_shape(c, b, c->shape); }

/* The observation and mask of the player to act at table b: the standard game's writer, with
 * its constant offsets, or the same code on the env's shape. */
static void observe_one(const Ctx *c, i64 b) {
    if (c->standard) observe_shape(c, b, STANDARD_SHAPE);
    else observe_other_shape(c, b);
}

/* Pass 1: the actions of tables lo..hi-1, and the observations of those that need no new hand.
 * Returns how many need one. */
i64 spades_step_play(const i64 *params, const double *dparams, void *const *ptrs, const i64 *sizes, i64 lo,
                     i64 hi) {
    Ctx ctx = make_ctx(params, dparams, ptrs, sizes);
    const Ctx *c = &ctx;
    i64 need = 0;
    const uint8_t *needs = (const uint8_t *)c->ptr[X_NEED];
    for (i64 b = lo; b < hi; b++) {
        play_one(c, b);
        if (needs[b]) need++;
        else observe_one(c, b);     /* while its state is in the cache; the others once dealt */
    }
    return need;
}

/* Pass 2: the new hands of tables lo..hi-1 that need one (pool rows from pool_offset on, in
 * table order), and their observations and masks. */
void spades_step_start(const i64 *params, const double *dparams, void *const *ptrs, const i64 *sizes, i64 lo,
                       i64 hi, i64 pool_offset) {
    Ctx ctx = make_ctx(params, dparams, ptrs, sizes);
    const Ctx *c = &ctx;
    const uint8_t *needs = (const uint8_t *)c->ptr[X_NEED];
    for (i64 b = lo; b < hi; b++)
        if (needs[b]) {
            start_one(c, b, pool_offset++);
            observe_one(c, b);
        }
}

/* One step of every table: both passes, with `threads` OpenMP threads sharing the tables in
 * slices (table order), or one after the other where the library was built without OpenMP.
 * Writes the pool pointer after the step to *new_offset. */
/* The entry points check their own arguments (a caller other than the Python side, or a bug
 * there, gets an error code, never a wild write): SPADES_BAD_ARGUMENTS for null pointers or
 * counts out of range; spades_step_all returns SPADES_BAD_ACTION - b for the first table b
 * whose action is not an action id (0..67, or 0..67+N with N messages), before any table is stepped. */
#define SPADES_BAD_ARGUMENTS (-10)
#define SPADES_BAD_ACTION (-1000)

/* The checks both entry points make of the step's arguments: 0, or the error to return. */
static i64 check_step_arguments(const i64 *params, const double *dparams, void *const *ptrs, const i64 *sizes,
                                i64 threads, i64 pool_offset, const i64 *new_offset) {
    if (!params || !dparams || !ptrs || !sizes || !new_offset) return SPADES_BAD_ARGUMENTS;
    i64 B = sizes[N_BATCH];
    if (B < 0 || sizes[N_POOL] < 0 || sizes[N_QUEUE] < 0 || threads < 0 || pool_offset < 0) return SPADES_BAD_ARGUMENTS;
    for (int k = 0; k < PTR_COUNT; k++)          /* the deal inputs may be absent; nothing else */
        if (!ptrs[k] && (k < X_POOL || k > X_FIXED_START_DEALER)) return SPADES_BAD_ARGUMENTS;
    const i64 *actions = (const i64 *)ptrs[X_ACTIONS];
    for (i64 b = 0; b < B; b++)
        if (actions[b] < 0 || actions[b] >= params[P_NUM_ACTIONS]) return SPADES_BAD_ACTION - b;
    return 0;
}

i64 spades_step_all(const i64 *params, const double *dparams, void *const *ptrs, const i64 *sizes, i64 threads,
                    i64 pool_offset, i64 *new_offset) {
    i64 refused = check_step_arguments(params, dparams, ptrs, sizes, threads, pool_offset, new_offset);
    if (refused) return refused;
    i64 B = sizes[N_BATCH];
#ifdef _OPENMP
    i64 counts[64];
    if (threads > 64) threads = 64;
    if (threads > B) threads = B;
    if (threads > 1) {
#pragma omp parallel num_threads((int)threads)
        {
            int t = omp_get_thread_num(), n = omp_get_num_threads();
            i64 lo = B * t / n, hi = B * (t + 1) / n;
            counts[t] = spades_step_play(params, dparams, ptrs, sizes, lo, hi);
#pragma omp barrier
            i64 offset = pool_offset;
            for (int i = 0; i < t; i++) offset += counts[i];
            spades_step_start(params, dparams, ptrs, sizes, lo, hi, offset);
#pragma omp single
            {
                i64 total = pool_offset;
                for (int i = 0; i < n; i++) total += counts[i];
                *new_offset = total;
            }
        }
        return 0;
    }
#endif
    (void)threads;
    i64 need = spades_step_play(params, dparams, ptrs, sizes, 0, B);
    spades_step_start(params, dparams, ptrs, sizes, 0, B, pool_offset);
    *new_offset = pool_offset + need;
    return 0;
}

/* ---- Playing the other seats: spades_step_until
 *
 * The caller plays some seats (the learner's); the loop plays the others, so that one call takes
 * every table from the learner's decision to its next one. Round 0 applies the caller's actions
 * at every table; each later round moves the tables whose player to act is not the caller's
 * (the others are held as they are), until none is. New hands are dealt after each round, pool
 * rows in table order, as spades_step_all deals them. Only then are the observations and masks
 * written: one per learner decision, where stepping seat by seat writes one per move. The
 * rewards of every move (B x 4), whether an episode ended (B), and the final scores and winner
 * of that episode (or the latest ones) are accumulated into the caller's buffers.
 * spades_env/vector_gym.py has the readable reference (masked steps of the torch engine); the
 * tests check that both agree exactly. */
enum { SEAT_CALLER = -1, SEAT_RANDOM = 0, SEAT_HEURISTIC = 1 };
enum { UNTIL_MAX_ROUNDS = 64 };
#define SPADES_NO_DECISION (-20)             /* the loop could not decide a move, or did not end */

typedef struct {
    const i64 *seat_kind;          /* 4 SEAT_* codes */
    const i64 *heuristic_layout;   /* spades_heuristic_decide's observation layout */
    uint64_t *rng;                 /* (B,) each table's random state (splitmix64), advanced per random move */
    double *rewards;               /* (B, 4) accumulated */
    uint8_t *ended;                /* (B,) 1 once an episode ended */
    i64 *final_scores;             /* (B, 2) */
    i64 *winner;                   /* (B,) */
    i64 *moves;                    /* (B,) how many moves the loop made for the other seats */
} Until;

/* A uniform float in [0, 1) from the table's splitmix64 stream: its top 24 bits, times 2^-24. */
static inline float next_uniform(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return (float)(z >> 40) * (1.0f / 16777216.0f);
}

static inline int is_callers(const Until *u, const Ctx *c, i64 b) {
    return u->seat_kind[I(S_TO_ACT)[b] & 3] == SEAT_CALLER;
}

/* The move of the seat to act at table b (not the caller's): -1 if none can be decided. */
static i64 other_move(const Ctx *c, const Until *u, i64 b) {
    if (u->seat_kind[I(S_TO_ACT)[b] & 3] == SEAT_HEURISTIC) {
        if (I(S_PHASE)[b] == SIGNAL) return SIGNAL_ACTION_BASE;    /* the heuristic sends message 0 */
        observe_one(c, b);            /* the table's row of the output: overwritten once the loop ends */
        i64 a = spades_heuristic_decide((const float *)c->ptr[X_OBS] + c->shape.size * b,
                                        (const uint8_t *)c->ptr[X_MASK] + c->shape.actions * b, u->heuristic_layout);
        return a >= 0 && a < 68 ? a : -1;
    }
    uint64_t low, high;                /* random: the k-th legal action, k = floor(u * count), as random_legal */
    legal_actions(c, b, &low, &high);
    i64 first = __builtin_popcountll(low), count = first + __builtin_popcountll(high);
    if (count == 0) return -1;
    i64 k = (i64)(next_uniform(u->rng + b) * (float)count);
    if (k > count - 1) k = count - 1;
    int in_high = k >= first;
    uint64_t rest = in_high ? high : low;
    for (k = in_high ? k - first : k; k > 0; k--) rest &= rest - 1;
    return __builtin_ctzll(rest) + (in_high ? 64 : 0);
}

/* One round at tables lo..hi-1 (round 0: every table, the caller's actions); returns how many
 * need a new hand, or SPADES_NO_DECISION if a move could not be decided. */
static i64 until_round(const Ctx *c, const Until *u, i64 lo, i64 hi, int first) {
    uint8_t *needs = (uint8_t *)c->ptr[X_NEED];
    const uint8_t *done = (const uint8_t *)c->ptr[X_DONE];
    i64 need = 0;
    for (i64 b = lo; b < hi; b++) {
        if (!first) {
            if (is_callers(u, c, b)) {
                needs[b] = 0;
                continue;
            }
            i64 a = other_move(c, u, b);
            if (a < 0) return SPADES_NO_DECISION;
            I(X_ACTIONS)[b] = a;
            u->moves[b] += 1;
        }
        play_one(c, b);
        const double *r = (const double *)c->ptr[X_REWARDS] + 4 * b;
        for (int s = 0; s < 4; s++) u->rewards[4 * b + s] += r[s];
        if (!u->ended[b]) {        /* the scores at the episode's end, or the latest */
            u->final_scores[2 * b] = I(X_FINAL_SCORES)[2 * b];
            u->final_scores[2 * b + 1] = I(X_FINAL_SCORES)[2 * b + 1];
            u->winner[b] = I(X_WINNER)[b];
        }
        u->ended[b] |= done[b];
        need += needs[b];
    }
    return need;
}

static void until_deal(const Ctx *c, i64 lo, i64 hi, i64 pool_offset) {
    const uint8_t *needs = (const uint8_t *)c->ptr[X_NEED];
    for (i64 b = lo; b < hi; b++)
        if (needs[b]) start_one(c, b, pool_offset++);
}

static i64 until_waiting(const Ctx *c, const Until *u, i64 lo, i64 hi) {
    i64 waiting = 0;
    for (i64 b = lo; b < hi; b++) waiting += !is_callers(u, c, b);
    return waiting;
}

static void until_observe(const Ctx *c, i64 lo, i64 hi) {
    for (i64 b = lo; b < hi; b++) observe_one(c, b);
}

/* The buffers are those of spades_step_all (rewards, done, final scores and winner are the
 * loop's scratch); `seat_kind`: 4 SEAT_* codes, at least one SEAT_CALLER; `heuristic_layout`
 * (needed if a seat is SEAT_HEURISTIC); `rng` (B); `rewards` (B x 4), `ended` (B),
 * `final_scores` (B x 2), `winner` (B), `moves` (B): outputs, zeroed here. Returns 0, an argument
 * error (SPADES_BAD_ARGUMENTS, SPADES_BAD_ACTION - b), or SPADES_NO_DECISION. */
i64 spades_step_until(const i64 *params, const double *dparams, void *const *ptrs, const i64 *sizes, i64 threads,
                      i64 pool_offset, i64 *new_offset, const i64 *seat_kind, const i64 *heuristic_layout,
                      uint64_t *rng, double *rewards, uint8_t *ended, i64 *final_scores, i64 *winner, i64 *moves) {
    if (!seat_kind || !rng || !rewards || !ended || !final_scores || !winner || !moves) return SPADES_BAD_ARGUMENTS;
    int callers = 0;
    for (int s = 0; s < 4; s++) {
        if (seat_kind[s] < SEAT_CALLER || seat_kind[s] > SEAT_HEURISTIC) return SPADES_BAD_ARGUMENTS;
        callers += seat_kind[s] == SEAT_CALLER;
        if (seat_kind[s] == SEAT_HEURISTIC && (!heuristic_layout || !spades_heuristic_layout_ok(heuristic_layout)))
            return SPADES_BAD_ARGUMENTS;
    }
    if (!callers) return SPADES_BAD_ARGUMENTS;
    i64 refused = check_step_arguments(params, dparams, ptrs, sizes, threads, pool_offset, new_offset);
    if (refused) return refused;
    i64 B = sizes[N_BATCH];
    memset(rewards, 0, (size_t)B * 4 * sizeof *rewards);
    memset(ended, 0, (size_t)B);
    memset(moves, 0, (size_t)B * sizeof *moves);
    Until until = {seat_kind, heuristic_layout, rng, rewards, ended, final_scores, winner, moves};
    const Until *u = &until;
    Ctx ctx = make_ctx(params, dparams, ptrs, sizes);
    const Ctx *c = &ctx;
    i64 status = 0, offset = pool_offset;
#ifdef _OPENMP
    i64 counts[64], waiting[64];
    if (threads > 64) threads = 64;
    if (threads > B) threads = B;
    if (threads > 1) {
#pragma omp parallel num_threads((int)threads)
        {
            int t = omp_get_thread_num(), n = omp_get_num_threads();
            i64 lo = B * t / n, hi = B * (t + 1) / n;
            int failed = 1;                            /* the same in every thread: they see the same counts */
            for (int round = 0; round < UNTIL_MAX_ROUNDS; round++) {
                counts[t] = until_round(c, u, lo, hi, round == 0);
#pragma omp barrier
                int refused = 0;
                i64 mine = offset, dealt = 0;
                for (int i = 0; i < n; i++) {
                    refused |= counts[i] < 0;
                    if (i < t) mine += counts[i];
                    dealt += counts[i];
                }
                if (refused) break;
                until_deal(c, lo, hi, mine);
                waiting[t] = until_waiting(c, u, lo, hi);
#pragma omp barrier
                i64 total = 0;
                for (int i = 0; i < n; i++) total += waiting[i];
#pragma omp barrier                                    /* every thread has read offset and waiting */
#pragma omp single
                offset += dealt;                       /* (a barrier ends the single) */
                if (!total) {
                    failed = 0;
                    break;
                }
            }
            if (!failed) until_observe(c, lo, hi);
#pragma omp single
            status = failed ? SPADES_NO_DECISION : 0;
        }
        *new_offset = offset;
        return status;
    }
#endif
    (void)threads;
    for (int round = 0;; round++) {
        if (round == UNTIL_MAX_ROUNDS) return SPADES_NO_DECISION;
        i64 need = until_round(c, u, 0, B, round == 0);
        if (need < 0) return SPADES_NO_DECISION;
        until_deal(c, 0, B, offset);
        offset += need;
        if (!until_waiting(c, u, 0, B)) break;
    }
    until_observe(c, 0, B);
    *new_offset = offset;
    return 0;
}

/* A uniformly random legal action per row of a (B, 68) 0/1 byte mask: the k-th legal action,
 * k = floor(u * count) for the row's uniform u in [0, 1) (the random player of spades-bench). */
static void random_legal_rows(const uint8_t *mask, const float *uniform, i64 *out, i64 width, i64 lo, i64 hi) {
    for (i64 b = lo; b < hi; b++) {
        const uint8_t *m = mask + width * b;
#ifdef __AVX2__
        if (width == 68) {              /* the engine's masks: the legal cells as 64 + 4 bits, then the k-th */
            const __m256i zero = _mm256_setzero_si256();
            uint64_t cells_0_31 = (uint32_t)~_mm256_movemask_epi8(
                _mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)m), zero));
            uint64_t cells_32_63 = (uint32_t)~_mm256_movemask_epi8(
                _mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(m + 32)), zero));
            uint64_t bits = cells_0_31 | cells_32_63 << 32;
            uint32_t tail = (m[64] != 0) | (m[65] != 0) << 1 | (m[66] != 0) << 2 | (m[67] != 0) << 3;
            i64 first = __builtin_popcountll(bits), count = first + __builtin_popcount(tail);
            i64 k = (i64)(uniform[b] * (float)count);
            if (k > count - 1) k = count - 1;
            if (count == 0) {
                out[b] = -1;
                continue;
            }
            int in_tail = k >= first;
            uint64_t rest = in_tail ? tail : bits;
            for (k = in_tail ? k - first : k; k > 0; k--) rest &= rest - 1;      /* drop the k lowest */
            out[b] = __builtin_ctzll(rest) + (in_tail ? 64 : 0);
            continue;
        }
#endif
        /* each cell is a 0/1 byte, so a word's popcount counts the legal actions in its 8 cells */
        i64 words = width / 8, count = 0;
        for (i64 w = 0; w < words; w++) {
            uint64_t word;
            memcpy(&word, m + 8 * w, 8);
            count += __builtin_popcountll(word);
        }
        for (i64 j = 8 * words; j < width; j++) count += m[j] != 0;
        i64 k = (i64)(uniform[b] * (float)count);
        if (k > count - 1) k = count - 1;
        i64 pick = -1, j = 0;
        for (i64 w = 0; w < words; w++, j += 8) {    /* skip whole words before the k-th */
            uint64_t word;
            memcpy(&word, m + 8 * w, 8);
            i64 here = __builtin_popcountll(word);
            if (here > k) break;
            k -= here;
        }
        for (; j < width; j++)
            if (m[j] && k-- == 0) {
                pick = j;
                break;
            }
        out[b] = pick;
    }
}

i64 spades_random_legal(const uint8_t *mask, const float *uniform, i64 *out, i64 rows, i64 width, i64 threads) {
    if (!mask || !uniform || !out || rows < 0 || width < 1 || threads < 0) return SPADES_BAD_ARGUMENTS;
#ifdef _OPENMP
    if (threads > 1 && rows >= 256) {
#pragma omp parallel num_threads((int)(threads < 64 ? threads : 64))
        {
            i64 t = omp_get_thread_num(), n = omp_get_num_threads();
            random_legal_rows(mask, uniform, out, width, rows * t / n, rows * (t + 1) / n);
        }
        return 0;
    }
#endif
    (void)threads;
    random_legal_rows(mask, uniform, out, width, 0, rows);   /* no OpenMP call at all on one thread */
    return 0;
}

/* Deals from random keys, as SpadesVectorEnv.draw_deals does in torch: card c goes to seat
 * rank(c) / 13, where rank orders the row's 52 keys (float32 in [0, 1)), ties by card index
 * (what a stable argsort gives). keys: (count, 52); dealers: (count,); out: (count, 5) rows
 * of four hand bitboards and the dealer. */
static void deal_rows(const float *keys, const i64 *dealers, i64 *out, i64 lo, i64 hi) {
    for (i64 row = lo; row < hi; row++) {
        /* a non-negative float's bits, as int32, order like its value; padded to 56 with keys
         * above every float in [0, 1) (so that the compiler's 8-lane loop needs no tail) */
        int32_t key[56];
        memcpy(key, keys + 52 * row, 52 * sizeof(float));
        for (int j = 52; j < 56; j++) key[j] = INT32_MAX;
        i64 hands[4] = {0, 0, 0, 0};
        for (int c = 0; c < 52; c++) {
            int32_t rank = 0, mine = key[c];
            for (int j = 0; j < 56; j++) rank += (key[j] < mine) | ((key[j] == mine) & (j < c));
            hands[rank / 13] |= (i64)1 << c;
        }
        memcpy(out + 5 * row, hands, sizeof hands);
        out[5 * row + 4] = dealers[row];
    }
}

i64 spades_deal_from_keys(const float *keys, const i64 *dealers, i64 *out, i64 count, i64 threads) {
    if (!keys || !dealers || !out || count < 0 || threads < 0) return SPADES_BAD_ARGUMENTS;
#ifdef _OPENMP
    if (threads > 1 && count >= 256) {
#pragma omp parallel num_threads((int)(threads < 64 ? threads : 64))
        {
            i64 t = omp_get_thread_num(), n = omp_get_num_threads();
            deal_rows(keys, dealers, out, count * t / n, count * (t + 1) / n);
        }
        return 0;
    }
#endif
    (void)threads;
    deal_rows(keys, dealers, out, 0, count);
    return 0;
}
