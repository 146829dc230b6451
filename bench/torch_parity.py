"""gpulab's tensor ops against torch's, case by case: every binary op, comparison, in-place op,
unary op, reduction, cast, broadcast, view, index op and join for every pair of the eight
dtypes, plus special values (NaN, infinities, overflow, integer limits); the gradients of the
differentiable ones; the layers' functions (losses, softmax, conv2d, max_pool2d); three steps of
SGD and Adam. Each case's result dtype, shape and values, or the fact that it is an error, must
be torch's.

    python3 bench/torch_parity.py                      # live torch, CPU (needs torch)
    python3 bench/torch_parity.py --device cuda        # live torch on the GPU, gpulab on cuda:0
    python3 bench/torch_parity.py --expected FILE.gz   # torch's recorded results, no torch needed
    python3 bench/torch_parity.py --record FILE.gz     # record torch's results (needs torch)

gpulab's side is `prelude/examples/torch_parity.rs` (`--exe PATH`, else built with cargo).
Exit status 1 when a case differs (KNOWN differences aside, each with its reason). `--json`
prints a summary object last, for gpu-check/run.py.
"""

import argparse
import contextlib
import gzip
import json
import math
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DTYPES = ["f32", "f64", "f16", "bf16", "i32", "i64", "u8", "bool"]
SCALARS = ["2", "-3", "2.5", "-0.5", "0"]
BINARY = ("add sub mul div pow maximum minimum eq ne lt le gt ge logical_and logical_or atan2 fmod "
          "remainder floor_divide").split()
VIEWS = ("narrow select t permute expand flip reshape squeeze index_select gather where cat stack "
         "t_matmul bmm_matrix bmm_stack bmm_broadcast bmm_vector_left bmm_vector_right bmm_mismatch").split()
CLAMPS = "clamp clamp_min clamp_max".split()  # with a scalar bound (torch's Python-number form)
INPLACE = "add_ sub_ mul_ div_".split()
UNARY = ("neg abs exp log sqrt relu sigmoid tanh sin cos floor ceil round sign log1p expm1 erf "
         "tan asin acos atan sinh cosh asinh acosh atanh softmax log_softmax").split()
REDUCE = ("sum mean max min argmax argmin sum_dim sum_keepdim mean_dim max_dim min_dim "
          "argmax_dim argmin_dim var std var_dim std_dim").split()
FLOATS = {"f32", "f64", "f16", "bf16"}
# Empty tensors (shapes with a 0): what each op gives, or that it is an error, as in torch.
EMPTY_SHAPES = ["0", "3x0", "0x3", "2x0x3"]
EMPTY_OPS = ("exp relu neg add mul_scalar lt_scalar sum mean max argmax var std sum_d0 sum_dlast "
             "mean_d0 mean_dlast max_d0 max_dlast argmax_d0 argmax_dlast var_d0 var_dlast softmax "
             "log_softmax_d0 matmul cat_d0 cat_dlast stack narrow index_select flip transpose reshape "
             "cast where cumsum_d0 cumsum_dlast cumprod_dlast prod prod_d0 prod_dlast "
             "any all any_d0 all_dlast count_nonzero amax amax_d0 amax_dlast logsumexp_d0 "
             "logsumexp_dlast median median_dlast roll roll_d0 nonzero unique unique_counts "
             "masked_select tile").split()
EMPTY_NN = "ce mse conv pool".split()
# torch's conveniences (composed from the ops above in gpulab): on the (2, 3) inputs, with the
# gradient of the first input where there is one. `s*` ops read the special values.
MORE = ("isnan isinf isfinite sisnan sisinf sisfinite square reciprocal rsqrt sreciprocal norm snorm "
        "leaky_relu silu sleaky_relu ssilu softplus ssoftplus softplus_big gelu sgelu gelu_wide "
        "elu elu_half selu hardtanh hardtanh_wide shardtanh relu6 relu6_big srelu6 mish smish isclose sisclose allclose masked_fill tril triu tril_neg "
        "outer dot repeat repeat_more chunk chunk_many split sort sort_desc ssort argsort topk "
        "topk_smallest stopk topk_dim0 zeros_like ones_like full_like normalize normalize_d0 "
        "snormalize norm_dim norm_keepdim cosine cosine_pairs one_hot one_hot_n "
        "cumsum cumsum_d0 scumsum cumprod cumprod_d0 scumprod cumprod_zeros prod prod_dim "
        "prod_keepdim sprod prod_zeros "
        "any any_dim all all_dim sany sall count_nonzero count_nonzero_dim amax amin_all amax_keep "
        "amax_ties samax logsumexp logsumexp_keep slogsumexp var_mean std_mean median median_dim "
        "median_d0 smedian smedian_dim kthvalue roll roll_flat roll2 diag diag_up diag_vec "
        "diag_vec_down trace movedim swapaxes unflatten tile tile_more nonzero snonzero "
        "masked_select masked_select_row unique unique_counts sunique bincount bincount_min histc "
        "histc_auto shistc log2 log10 exp2 slog2 sexp2 trunc strunc frac sfrac lerp lerp_far "
        "addmm addmm_beta0 equal equal_not pad pad_value pad_crop pad_three reflect reflect2 "
        "reflect_crop reflect_far replicate replicate2 circular circular_far pad_mode "
        "exp_ relu_ sqrt_ round_ neg_ abs_ sigmoid_ clamp_ pow_ masked_fill_ log2_ trunc_ "
        "square_ nansum nansum_dim nanmean nanmean_dim snansum snansum_dim snanmean snanmean_dim "
        "new_zeros new_full diagonal diagonal_below diagonal_3d fmod_nz remainder_nz floor_divide_nz "
        "fmod_wide remainder_wide fmod_ remainder_ tan_ deg2rad rad2deg atan2_bcast nan_to_num "
        "snan_to_num nan_to_num_args snan_to_num_args logical_xor logaddexp slogaddexp logaddexp2 "
        "slogaddexp2 xlogy sxlogy logit logit_eps cdist cdist_p1 cdist_inf cdist_p0 cdist_p3 "
        "cdist_self dist dist_p3 dist_inf cross unbind unbind_d0 meshgrid_ij meshgrid_xy "
        "repeat_interleave repeat_interleave_dim repeat_interleave_counts cummax cummax_d0 cummin "
        "scummax scummin searchsorted searchsorted_right searchsorted_rows bucketize "
        "bucketize_right ssearchsorted index_int index_neg index_step index_range index_none "
        "index_ellipsis index_tensor index_tensor2d index_mask index_clamp index_step_range conv1d "
        "conv1d_pad conv1d_same conv1d_groups conv1d_unbatched max_pool1d max_pool1d_pad avg_pool1d "
        "avg_pool1d_pad unfold unfold_pad unfold_3d fold fold_overlap kl_div kl_div_batchmean "
        "kl_div_sum kl_div_none kl_div_log kl_div_bad var_pop var_keep std_pop_all std_keep_all "
        "quantile quantile_dim quantile_keep quantile_end squantile_dim nanquantile_dim "
        "snanquantile_dim quantile_bad cov cov_pop cov_vec corrcoef corrcoef_vec aminmax "
        "aminmax_dim diff diff_d0 diff_two flatten_from flatten_dims expand_as type_as prelu "
        "prelu_one instance_norm instance_norm_affine hardsigmoid hardsigmoid_wide hardswish "
        "hardswish_wide logsigmoid slogsigmoid softsign tanhshrink softshrink hardshrink glu glu_d0 "
        "celu celu_half selu_act sselu_act softmin take take_2d index_fill index_copy index_fill_ "
        "index_copy_ rot90 rot90_k2 rot90_neg fliplr flipud pairwise_distance pairwise_distance_p1 "
        "pairwise_distance_inf " +
        "mm bmm mv inner inner_vec vdot kron kron_vec addmv addr baddbmm addbmm addmm_half addcmul addcmul_half addcdiv addcdiv_int fmax sfmax fmin sfmin hypot shypot copysign scopysign copysign_zero heaviside signbit ssignbit isposinf sisposinf isneginf sisneginf sinc ssinc float_power float_power_t sgn clip arccos arctan2 true_divide atleast_2d atleast_3d atleast_3d_mat hstack hstack_vec vstack dstack column_stack tensor_split tensor_split_many tensor_split_at hsplit hsplit_bad vsplit dsplit block_diag cartesian_prod take_along_dim take_along_dim_flat take_along_dim_bcast ravel msort smsort moveaxis " +
        "det det_2 det_batch slogdet inv inv_2 inv_singular solve solve_vec solve_batch solve_bad " +
        "lgamma slgamma digamma sdigamma polygamma1 spolygamma1 polygamma2 polygamma3 mvlgamma "
        "mvlgamma_3 erfc serfc erfinv serfinv zeta zeta_q zeta_number zeta_other ndtr sndtr entr "
        "sentr xlog1py sxlog1py lgamma_ erfinv_ polygamma_ " + "vector_norm3 vector_norm_dim vector_norm_inf vector_norm_ninf vector_norm0 vector_norm_neg vector_norm_half svector_norm3 svector_norm_inf matrix_norm_fro matrix_norm1 matrix_norm_ninf matrix_norm_inf matrix_power0 matrix_power1 matrix_power3 matrix_power5 matrix_power_neg cholesky cholesky_upper cholesky_bad logcumsumexp logcumsumexp_wide logcumsumexp_d0 slogcumsumexp " + "qr qr_tall qr_sq qr_complete qr_r eigh eigh_upper eigvalsh svd svd_full svd_sq svdvals matrix_norm2 matrix_norm_n2 matrix_norm_nuc matrix_rank matrix_rank_low matrix_rank_rtol pinv pinv_sq pinv_rank1 cond cond_fro cond_tall " + "solve_triangular solve_triangular_right solve_triangular_unit lstsq lstsq_res lstsq_gelsd lstsq_rank lstsq_vec multi_dot multi_dot_vec vecdot vecdot_d0 vander vander_n " + "lu_factor lu_pivots lu lu_tall lu_wide lu_solve lu_solve_adj lu_solve_right " + "matrix_exp matrix_exp_big matrix_exp_batch lnorm lnorm_ord lnorm_dim lnorm_mat lnorm_mat_dims logdet logdet_neg cholesky_solve cholesky_solve_upper cholesky_inverse cholesky_inverse_upper pinverse " + "tensordot tensordot_dims tensordot_0 tensordot_bcast tensorinv tensorsolve tensorsolve_dims householder_product householder_batch geqrf geqrf_tall orgqr lcross lcross_rank ldiagonal ldiagonal_off " + "inv_ex inv_ex_singular solve_ex cholesky_ex cholesky_ex_bad lu_factor_ex lu_factor_ex_singular lu_factor_singular " + "margin_ranking margin_ranking_none hinge_embedding hinge_embedding_sum soft_margin soft_margin_none cosine_embedding cosine_embedding_vec cosine_embedding_none triplet triplet_swap_p1 triplet_none triplet_bad multi_margin multi_margin_p2_w multi_margin_vec multi_margin_none multi_margin_bad multilabel_margin multilabel_margin_none multilabel_margin_vec multilabel_soft multilabel_soft_w multilabel_soft_none poisson_nll poisson_nll_rate_full poisson_nll_none gaussian_nll gaussian_nll_eps gaussian_nll_var gaussian_nll_row gaussian_nll_bad gaussian_nll_none").split()
MORE_MADE_EXTRA = "logspace logspace_base2 logspace_one".split()
MORE_MADE = "linspace linspace_one linspace_none eye eye_none tril_indices triu_indices".split()
# The class losses' options: class weights, ignored targets (-100 or another index), label
# smoothing, class probabilities as targets, extra dimensions after the classes, unbatched.
CLS = ("ce_w ce_w_sum ce_w_none ce_ignore ce_ignore_none ce_ls ce_ls_w ce_ls_w_sum ce_ls_none "
       "ce_prob ce_prob_w_ls ce_prob_none ce_kdim ce_kdim_w_ls ce_kdim_none ce_1d ce_all_ignored "
       "nll_w nll_w_none nll_ignore1 nll_kdim ce_bad_w ce_bad_label nll_prob").split()
# Writes by index: scatter_add, scatter (a tensor or a number), index_add, out of place and in
# place; the result, or the gradients for the tensor (x) and the source (y).
SCAT = ("scatter_add scatter_add_d1 scatter_add_small scatter scatter_d1 scatter_value index_add "
        "index_add_alpha index_add_d1 scatter_add_ index_add_ scatter_bad scatter_i32 "
        "index_add_bad").split()
# Advanced indexing and index assignment on a [2, 3, 4] ramp: several index tensors broadcast
# together, masks, lists, 0-d tensors, and where the picked dimensions go; torch's index_put
# (the gradients for the tensor, x, and the values, y) and Python's `x[idx] = v` (gpulab's
# `i_set`) on a copy.
ADV = ("pair int_sep sep int_adj bcast none_sep mask2 mask_int mask_mid t0 list list_pair "
       "bool0 bool0_false neg u8mask empty bad_bcast oob put put_acc put_bcast put_mask "
       "put_basic put_bad put_dtype set_scalar set_slice set_mask set_tensor set_float set_big "
       "set_neg set_fill_big set_fill_nan set_masked_big set_full_like_big set_index_fill_neg "
       "set_fill_neg set_fill_negf set_masked_negf").split()
# einsum: the equation, and the shapes of its operands (ramps).
EINSUM = {
    "mm": ("ij,jk->ik", [[2, 3], [3, 4]]), "dot": ("i,i->", [[3], [3]]),
    "outer": ("i,j->ij", [[3], [2]]), "t": ("ij->ji", [[2, 3]]), "sum": ("ij->", [[2, 3]]),
    "rows": ("ij->i", [[2, 3]]), "diag": ("ii->i", [[3, 3]]), "trace": ("ii", [[3, 3]]),
    "bmm": ("bij,bjk->bik", [[2, 2, 3], [2, 3, 2]]), "mv": ("ij,j->i", [[2, 3], [3]]),
    "implicit": ("ij,jk", [[2, 3], [3, 4]]), "rev": ("ijk->kji", [[2, 3, 2]]),
    "attn": ("bhqd,bhkd->bhqk", [[1, 2, 3, 2], [1, 2, 4, 2]]),
    "three": ("ij,jk,kl->il", [[2, 3], [3, 2], [2, 2]]), "hadamard": ("ij,ij->ij", [[2, 3], [2, 3]]),
    "bilinear": ("i,ij,j->", [[2], [2, 3], [3]]), "diag2": ("iij->ij", [[2, 2, 3]]),
    "bad_out": ("ij,jk->il", [[2, 3], [3, 4]]), "bad_size": ("ij,jk->ik", [[2, 3], [2, 4]]),
    "bad_count": ("ij,jk->ik", [[2, 3]]),
    "ell_bmm": ("...ij,...jk->...ik", [[2, 1, 3, 2], [4, 2, 3]]),
    "ell_noarrow": ("...ij,...jk", [[2, 1, 3, 2], [4, 2, 3]]),
    "ell_sum": ("i...->...", [[3, 2, 2]]), "ell_diag": ("...ii->...i", [[2, 3, 3]]),
    "ell_drop": ("...ij->ij", [[2, 3, 2]]), "ell_mid": ("ij...->...ji", [[2, 3, 2, 2]]),
    "ell_bad": ("...i,...i", [[2, 3], [4, 3]]), "ell_bcast": ("...,...->...", [[3], [2, 1]]),
}
# Normalisation layers: output, gradients (input, weight, bias) and running statistics.
# Recurrent layers: output, final states and gradients (input, h_0, first layer's weights).
RNNS = "rnn rnnrelu lstm gru lstm2 gru2 gru_nobias lstm_unbatched lstm2_bi gru_bi".split()
# A packed batch of three sequences (lengths sorted, or unsorted with enforce_sorted=False).
RNNS += "lstm_packed gru_packed_bi rnn_packed_unsorted lstm2_packed_unsorted_bi".split()
CELLS = "rnncell rnncell_relu lstmcell grucell grucell_nobias lstmcell_unbatched".split()
NORMS = "bn2d_train bn1d_train bn1d3_train bn2d_eval ln ln2 gn gn1 gn3d".split()
# torch's norm options: bn affine=False (na), track_running_stats=False (nt), momentum=None
# (cum, two training steps before eval); instance norm tracked (tr), unbatched (unb), tracked
# with momentum=None (mn).
NORM_OPTIONS = {"bn1dna_train": ("out", "x", "rm", "rv"), "bn2dnt_eval": ("out", "x", "w", "b"),
                "bn1dcum_eval": ("out", "x", "w", "b", "rm", "rv"),
                "in2dtr_train": ("out", "x", "w", "b", "rm", "rv"), "in1dtr_eval": ("out", "x", "rm", "rv"),
                "in2dunb": ("out", "x", "w", "b"), "in1dmn_train": ("out", "x", "rm", "rv")}
# Weight and spectral normalisation (param_case): torch's parametrizations and older hooks,
# the tensors set to ramps; the output, the input's gradient, each parameter's (pK, in
# named_parameters order) and each buffer after the forward (bK: spectral norm's u and v).
PARAMS = {"wn_lin": 3, "wn_lin_none": 3, "wn_conv_d1": 3, "wn_old_conv1d": 3, "wn_old_gru_hh": 5,
          "wn_old_gru_both": 6, "wn_sn_lin": 3, "sn_lin": 2, "sn_lin_eval": 2, "sn_lin_it3": 2,
          "sn_convT": 2, "sn_conv_d1": 2, "sn_bias": 2, "sn_old_lin": 2, "sn_old_eval": 2,
          "sn_old_bias": 2,
          # orthogonal (square: matrix_exp, else householder; cayley; no trivialization; init:
          # the weight orthogonalised at the start) and register_parametrization with a
          # user's modules (Symmetric; Symmetric then Scaled, a parametrization with a parameter).
          "orth_sq": 2, "orth_tall": 2, "orth_wide": 2, "orth_cayley": 2, "orth_exp_tall": 2,
          "orth_hh_notriv": 2, "orth_init": 2, "reg_sym": 2, "reg_two": 3}
PARAM_BUFFERS = {op: (2 if op.startswith("sn") and op != "sn_bias" else 0) for op in PARAMS}
PARAM_BUFFERS["orth_init"] = 1
# torch.func.functional_call (fcall_case): a Linear with both tensors given, with the weight
# only, and a Linear + BatchNorm1d in eval with its running statistics given; tK is the K-th
# given tensor's gradient, own/ownb the module's own weight's/bias's (none where replaced).
FCALLS = {"lin": ("out", "x", "t0", "t1", "own", "ownb"), "partial": ("out", "x", "t0", "own", "ownb"),
          "seq_bn": ("out", "x", "t0", "own")}
# torch.autograd.grad (agrad_case): gradients returned, not accumulated (xgrad: x.grad after,
# which stays None), with respect to an intermediate tensor (mid), with a grad_output (seed),
# an unused input with and without allow_unused.
AGRADS = {"chain": ("x", "w", "xgrad"), "mid": ("h",), "seed": ("w",), "unused": ("w", "z"),
          "unused_err": ("w",), "retain": ("h", "x")}
# torch.autograd.functional (jac_case): jacobians of x.sin() * x.sum(), x @ W and a constant;
# vjp of 2 tanh(x) with v (and its output, y), and of a scalar without v.
JACS = {"sin_sum": ("out",), "mm": ("out",), "const": ("out",), "vjp_tanh": ("out", "y"),
        "vjp_scalar": ("out",)}
# nn.utils.prune (prune_case) on a Linear(4, 3) (a Conv2d for conv), its tensors made distinct
# (no ties in magnitude): one step, two steps (the second among what is left), structured by
# L2, L1 and L-inf norms along either dim, a custom mask, the bias, identity; pK the K-th
# parameter's gradient (bias, then weight_orig), b0 the mask.
PRUNES = "l1_03 l1_5 l1_twice ln2_d0 ln1_last lninf_d0 ln_l1 l1_ln custom conv bias ident".split()
# global_unstructured over the weights of Linear(4, 3) and Linear(3, 2) (their tensors made
# distinct): once, twice, and after pruning the second alone; mK the K-th layer's mask.
GLOBAL_PRUNES = "global global_twice global_pre".split()
# torch.func (func_case): grad, grad_and_value, vjp's pullback called twice, jacrev, vmap
# (rows; columns in and out), vmap of grad (per-row gradients).
FUNCS = {"grad_sin": ("out",), "grad_value": ("out", "y"), "vjp_twice": ("out", "v1", "v2"),
         "jacrev_tanh": ("out",), "vmap_rows": ("out",), "vmap_cols": ("out",), "vmap_grad": ("out",)}
# linalg.householder_product and matrix_exp take float32 and float64.
PARAM_DTYPES = {op: ("f32", "f64") for op in PARAMS if op.startswith("orth")}
GRAD_BINARY = "add sub mul div pow maximum minimum atan2 fmod remainder".split()
# Mixed precision: an op or a layer in an autocast region (bf16 or f16) on float32 inputs and
# weights (amp_case), and GradScaler's steps (scaler_case).
AMP = ("linear matmul dot bmm conv convT sdpa ce nll mse l1 bce bcel softmax logsoftmax ln gn bn relu "
       "addf32 prod cumsum norm interp lstm gru mha exp log pow square sum mean var elu mish sinh "
       "avgpool").split()
SCALERS = "clean inf unscale growth".split()
GRAD_REDUCE = "sum mean max min sum_dim sum_keepdim mean_dim max_dim min_dim var std var_dim std_dim".split()

# The "nn" cases of pixel_shuffle .. pdist: op and parameters (see nn_more).
NN_MORE = {
    "pixshuf": ("r2", "r3"), "pixunshuf": ("r2", "r3"), "chshuf": ("g2", "g3"),
    "rms": ("w", "n2", "e01"), "lrn": ("s3", "s2", "s4"),
    "lppool": ("p2k2", "p3k3s2c", "p1k2s1", "p15k2"), "lppool1": ("p2k2", "p3k3s2c"),
    "adamax": ("o1x1", "o2x2", "o4x3", "o3x5"), "adamaxi": ("o2x3", "o4x4"),
    "adaavg1": ("o3", "o1"), "adamax1": ("o3", "o4"),
    "pdist": ("p2", "p1", "pinf", "p0", "p3"),
    "pooli": ("k2s2", "k3s2p1", "k3s2p1d2c", "k23s12c"), "pool1i": ("k2s2", "k3s2p1c"),
    "unpool": ("k2s2", "k3s2p1", "k2s2o"), "unpool1": ("k2s2", "k3s1p1"),
    # The 3-D layers (see nn_3d).
    "conv3d": ("s1p0", "s2p1", "d2g2", "same", "unb"),
    "pool3d": ("k2", "k3s2p1", "k3s2p1d2c", "k122s1", "unb"), "pool3di": ("k2", "k3s2p1", "k3s2p1d2c", "k122s1"),
    "avg3d": ("k2", "k3s2p1", "k3s2p1c", "k3s2p1cx", "k2div3", "unb"),
    "bn3d": ("train",), "in3d": ("plain",), "drop3d": ("eval",),
    # Threshold, Softmax2d, RReLU's eval slope, bilinear, the triplet loss with a distance.
    "thresh": ("t05v2", "t0v0"), "smax2d": ("b", "unb"), "rrelu": ("eval", "eval_wide"),
    "bilin": ("b", "nob", "lead"), "tripletd": ("plain", "swap", "cos", "sum"),
    # interpolate's other modes and ranks (see nn_resize).
    "resize": ("lin2", "lin7a", "lin15", "bic2", "bic57a", "bic23", "bic15", "tri2", "tri345a",
               "area1d", "area2d", "area3d", "areaup", "n1d", "n3d", "ne3d"),
    "adaavg3": ("o111", "o234", "o322", "unb"), "adamax3": ("o111", "o234", "o322", "unb"),
    "convT3d": ("k2s2", "s2p1o1", "g2d2", "unb"),
    # grid_sample: mode (b, n, c) x padding (z, b, r), a for align_corners; affine_grid.
    "gsamp": ("bz", "bb", "br", "nz", "nb", "nr", "cz", "cb", "cr", "bza", "bra", "nra", "cba"),
    "affine": ("plain", "align"),
    "ebag": ("mean2d", "max2d", "sum_off", "max_off", "mean_pad", "sum_psw", "sum_last"),
    # The 2-D ops on an unbatched [C, H, W] image, conv_transpose1d, divisor_override.
    "unb2d": ("conv", "convT", "pool", "avg", "adaavg", "adamax", "unpool", "lppool"),
    "convT1d": ("k3s2", "p1o1", "g2d2", "unb"), "avgdiv": ("k2d3", "k3s2p1cd5", "unb"),
    # ctc_loss of log_softmax(x) (see CTC_CASES).
    # grid_sample on volumes: mode (b, n) x padding (z, b, r), a for align_corners.
    "gsamp3": ("bz", "bb", "br", "nz", "nb", "nr", "bza", "bra", "nza"), "affine3": ("plain", "align"),
    # Fractional max pooling with fixed random samples (FMP_CASES), values and indices.
    "fmp2": ("k2o3", "k3r05", "k23o34", "unb"), "fmp2i": ("k2o3", "k3r05", "k23o34", "unb"),
    "fmp3": ("k2o233", "k2r06", "unb"), "fmp3i": ("k2o233", "k2r06", "unb"),
    "adamax3i": ("o111", "o234", "o322", "unb"), "unpool3d": ("k2", "k3s2p1", "unb"),
    "ctc": ("none", "mean", "sum", "concat", "blank2", "rep", "short", "zinf", "noframes", "unb"),
    # lp_pool3d, adaptive_max_pool1d's indices, the old upsampling layers.
    "lppool3": ("p2k2", "p3k3s2c", "p15k122s1", "unb"), "adamax1i": ("o3", "o4u"),
    "upnear": ("s2", "sz", "s3d"), "upbil": ("s2", "sz"),
    # nn.utils.rnn: pad_sequence, and packing a padded batch (its data, or padded back).
    "padseq": ("r", "lbf", "pv"), "packpad": ("sorted", "unsorted", "bf", "roundtrip", "unpack"),
    # nn.utils: a conv or linear layer with a batch norm folded in; clip_grad_norm_'s norm
    # types; parameters_to_vector and back.
    "fuse": ("conv", "convnb", "convT", "lin", "linnb"), "clipn": ("p1", "pinf", "p3"), "p2v": ("vec",),
    # AdaptiveLogSoftmaxWithLoss: the targets' log probabilities (with a head bias and
    # div_value 2), the loss, every class's, the prediction, an unbatched row.
    "asm": ("fwd", "hb", "loss", "logp", "pred", "unb"),
    # The in-place activations, on a copy outside autograd (gpulab records no in-place write
    # for backward; it refuses one on a tensor backward needs).
    "inact": ("relu", "elu", "leaky", "hardtanh", "threshold", "selu", "celu", "rrelu"),
}
# fractional_max_pool cases: kernel, output_size, output_ratio (mirrored in torch_parity.rs);
# the samples, one per plane and axis, in FMP_SAMPLES.
FMP_CASES = {
    2: {"k2o3": (2, (3, 3), None), "k3r05": (3, None, (0.5, 0.5)), "k23o34": ((2, 3), (3, 4), None),
        "unb": (2, (4, 4), None)},
    3: {"k2o233": (2, (2, 3, 3), None), "k2r06": (2, None, (0.6, 0.6, 0.6)), "unb": ((1, 2, 2), (3, 3, 4), None)},
}
FMP_SAMPLES = [0.1, 0.7, 0.45, 0.9, 0.3, 0.55]
# ctc_loss cases: frames, targets, input lengths, target lengths, blank, reduction,
# zero_infinity (mirrored in torch_parity.rs's nn_unbatched).
CTC_CASES = {
    "none": (5, [[1, 2], [3, 3]], [5, 4], [2, 2], 0, "none", False),
    "mean": (5, [[1, 2], [3, 3]], [5, 4], [2, 2], 0, "mean", False),
    "sum": (5, [[1, 2], [3, 3]], [5, 4], [2, 1], 0, "sum", False),
    "concat": (5, [1, 2, 3], [5, 5], [2, 1], 0, "none", False),
    "blank2": (6, [[1, 3], [0, 0]], [6, 5], [2, 1], 2, "mean", False),
    "rep": (7, [[2, 2, 2], [1, 2, 1]], [7, 7], [3, 3], 0, "none", False),
    "short": (5, [[1, 2], [3, 3]], [1, 5], [2, 2], 0, "none", False),
    "zinf": (5, [[1, 2], [3, 3]], [1, 5], [2, 2], 0, "mean", True),
    "noframes": (4, [[1, 2], [3, 3]], [4, 0], [2, 0], 0, "none", False),
    "unb": (5, [1, 3], [5], [2], 0, "sum", False),
}
# What each NN_MORE op's cases compare besides "out" (the gradients of these inputs).
NN_WANTS = {"adamaxi": (), "adamax1i": (), "inact": (), "clipn": (), "p2v": (), "adamax3i": (), "fmp2i": (), "fmp3i": (), "pooli": (), "pool1i": (), "pool3di": (), "conv3d": ("x", "w", "b"),
            "convT3d": ("x", "w", "b"), "convT1d": ("x", "w", "b"), "gsamp": ("x", "g"), "gsamp3": ("x", "g"), "ebag": ("w", "p"),
            "bn3d": ("x", "weight", "bias"), "drop3d": (), "bilin": ("x1", "x2", "w", "b"),
            "tripletd": ("a", "p", "n")}


# Cases where gpulab keeps its own answer on purpose.
KNOWN = {
    # torch 2.9.1's linalg.cond for a p other than ±2 (the norm of A times that of inv(A))
    # fails its own backward: "one of the variables needed for gradient computation has been
    # modified by an inplace operation ... output 0 of LinalgInvExBackward0". gpulab's is
    # the product rule through inv's gradient, checked against finite differences.
    **{f"more cond_fro {d} x": "torch's cond(A, 'fro') backward fails (an in-place write into inv_ex's output)"
       for d in ("f32", "f64", "f16", "bf16")},
    # The gradient through the LU factor of a singular matrix: torch's divides by U's zero
    # pivot and gives NaN everywhere; gpulab's triangular solves refuse it with an error
    # naming the singular matrix, rather than returning NaN.
    **{f"more lu_factor_ex_singular {d} x": "torch's gradient through a singular LU is NaN; gpulab refuses it"
       for d in ("f32", "f64", "f16", "bf16")},
    # torch's logcumsumexp backward goes through exp(logcumsumexp(log g - y) + x), which
    # loses digits when the inputs span hundreds (4499.99999 for 4500 in float64, 635 for 600
    # in float16) and is NaN beside an infinite input; gpulab's gradient is the scan's own
    # chain rule (each element's softmax weight), exact to rounding there.
    **{f"more {op} {d} x": "torch's logcumsumexp backward loses digits over a wide range"
       for op in ("logcumsumexp_wide", "slogcumsumexp") for d in ("f32", "f64", "f16", "bf16")},
    # torch's scatter_add backward fails when the source is larger than the index (it returns
    # the index's shape); gpulab gives the source's shape, zero where nothing was read.
    **{f"scat scatter_add_small {d} {w}": "torch's scatter_add backward fails for a larger source"
       for d in ("f32", "f64", "f16", "bf16") for w in ("x", "y")},
    # torch's CPU trace has no float16/bfloat16 kernel; gpulab sums the diagonal in the
    # tensor's dtype, as it sums anything else.
    **{f"more trace {d} {w}": "torch's CPU trace has no half-precision kernel"
       for d in ("f16", "bf16") for w in ("out", "x")},
    # torch's CPU multi_margin_loss and multilabel_margin_loss have no float16/bfloat16
    # kernels (its CUDA ones do); gpulab composes them from ops every dtype has.
    **{f"more {op} {d} {w}": "torch's CPU class-margin losses have no half-precision kernel"
       for op in ("multi_margin", "multi_margin_p2_w", "multi_margin_vec", "multi_margin_none",
                  "multilabel_margin", "multilabel_margin_none", "multilabel_margin_vec")
       for d in ("f16", "bf16") for w in ("out", "x")},
    # torch's CPU avg_pool3d, which local_response_norm uses for inputs of 4 or more
    # dimensions, has no float16/bfloat16 kernel (its CUDA one does); gpulab sums the windows
    # in float32 as torch's 3-D path (avg_pool2d) does.
    **{f"nn lrn {d} {p} {w}": "torch's CPU avg_pool3d has no half-precision kernel"
       for d in ("f16", "bf16") for p in ("s3", "s4") for w in ("out", "x")},
    # A negative float cast to uint8 is undefined behaviour in C++; torch's CPU wraps through
    # int64 (-3.0 -> 253), CUDA's conversion instruction saturates. gpulab saturates (0) on
    # both devices, so the answer does not depend on the device.
    **{f"cast x {d} u8": "negative floats to uint8 are undefined in torch" for d in FLOATS},
    # torch's pow backward computes `exponent - 1`, which it refuses for a bool exponent;
    # gpulab promotes the exponent first and gives the gradient (1 where it is true, else 0).
    **{f"grad pow {d} bool x": "torch's backward fails on a bool exponent" for d in FLOATS},
    # torch's loss kernels treat mixed dtypes their own way: mse_loss's backward refuses them
    # ("Found dtype Double but expected Float"), binary_cross_entropy_with_logits returns the
    # target's dtype and refuses integer targets. gpulab promotes as every op does (integer
    # targets count as the input's dtype).
    **{f"nn mse {a} {b} {w}": "torch's mse_loss backward refuses mixed dtypes"
       for a in DTYPES for b in DTYPES if a != b for w in ("x", "y")},
    **{f"nn bce {a} {b} {w}": "torch's bce-with-logits keeps the target's dtype, refuses int targets"
       for a in FLOATS for b in DTYPES if a != b for w in ("out", "x", "y")},
    # torch's softmax refuses integer input, except an empty one, which it returns as it is;
    # gpulab refuses integer input whatever its size.
    **{f"empty {op} i64 {s} out": "torch's softmax of an empty int tensor is not an error"
       for op in ("softmax", "log_softmax_d0") for s in EMPTY_SHAPES},
    # torch's float32 CPU gelu (vectorised erf) gives NaN at +inf; its float64 one, and
    # gpulab in every dtype, give inf (erf(inf) = 1).
    **{f"more sgelu {d} out": "torch's float32 CPU gelu(+inf) is NaN" for d in ("f32", "bf16")},
    # torch's CPU avg_pool2d takes int64 (sums truncated by integer division), its CUDA one
    # refuses every integer dtype; gpulab refuses integer input on every device.
    **{f"nn avgpool i64 {p} out": "torch's CPU avg_pool2d takes int64, its CUDA one does not"
       for p in ("k2s2", "k3s1p1", "k2s1", "k3s2p1", "k3s2p1x", "k3s2p1c", "k3s2p1cx", "k23s21c")},
    # ... and its avg_pool3d takes int64 too while the CUDA one refuses integers, and has no
    # float16/bfloat16 kernel while the CUDA one has; gpulab refuses integers and computes
    # halves in float32 on every device, as for the 2-D pooling.
    **{f"nn avg3d i64 {p} out": "torch's CPU avg_pool3d takes int64, its CUDA one does not"
       for p in NN_MORE["avg3d"]},
    **{f"nn avg3d {d} {p} {w}": "torch's CPU avg_pool3d has no half-precision kernel"
       for d in ("f16", "bf16") for p in NN_MORE["avg3d"] for w in ("out", "x")},
    # A packed batch: torch's CPU runs each step on the sequences still going, a different
    # summation order from gpulab's masked full-batch steps; both are within 2e-7 of the
    # float64 result relative to its largest value (measured: gru_packed_bi x, gpulab 8.9e-8
    # and torch 1.7e-7; lstm2_packed_unsorted_bi wih, 1.9e-7 and 1.3e-7), one element apart
    # by 3e-6 relative to itself.
    "rnn gru_packed_bi f32 x": "torch's packed steps sum in another order (both within 2e-7 of float64)",
    "rnn lstm2_packed_unsorted_bi f32 wih": "torch's packed steps sum in another order (both within 2e-7 of float64)",
    # A fused float16 weight is rounded once on each side from different products; the
    # gradient through it is as far from float64's on both (measured: 1.15e-3 of the largest
    # value each).
    "nn fuse f16 convnb x": "the fused float16 weight rounds differently (both 1.15e-3 from float64)",
    # Every class's bfloat16 log probability sums the head's and a cluster's gradients in
    # another order; as far from float64 as torch's (measured: 4.69e-3 of the largest value
    # each), one small element a bfloat16 unit apart.
    "nn asm bf16 logp x": "bfloat16 gradient sums in another order (both 4.69e-3 from float64)",
    # torch's Module.to refuses integer dtypes; gpulab's to_dtype converts a layer's tensors.
    **{f"nn {op} {a} {p} out": "torch's Module.to refuses integer dtypes" for a in ("i32", "i64", "u8")
       for op, p in [("p2v", "vec")] + [("asm", p) for p in NN_MORE["asm"]]},
    # lp_pool3d is avg_pool3d of x^p, so torch's CPU refuses halves there too; gpulab's are
    # within a unit in the last place or two of torch's float64 result (measured: f16 9e-4,
    # bf16 6.4e-3 of the largest value, /tmp/vs64.py-style comparison).
    **{f"nn lppool3 {d} {p} {w}": "torch's CPU avg_pool3d (under lp_pool3d) has no half-precision kernel"
       for d in ("f16", "bf16") for p in NN_MORE["lppool3"] for w in ("out", "x")},
    # The old upsampling layers are interpolate: torch's nearest refuses int32/int64/bool,
    # its CPU bilinear takes uint8 (gpulab's interpolating modes take floats only).
    **{f"nn upnear {a} {p} out": "torch's nearest interpolate refuses int32/int64/bool"
       for a in ("i32", "i64", "bool") for p in NN_MORE["upnear"]},
    **{f"nn upbil u8 {p} out": "torch's CPU bilinear interpolate takes uint8" for p in NN_MORE["upbil"]},
    # conv3d with a dilation: torch's CPU has no integer kernel for that either.
    **{f"nn conv3d {a} d2g2 out": "torch's CPU has no integer dilated convolution" for a in ("i32", "u8")},
    # torch's CPU softmax backward over a dimension other than the last (Softmax2d's channels)
    # keeps its sums in float16/bfloat16: gpulab's, in float32, is about ten times nearer
    # float64's (measured: bf16 3.6e-3 against torch's 2.4e-2, f16 4.2e-4 against 4.5e-3).
    **{f"nn smax2d {d} b x": "torch's CPU half softmax backward off the last dim sums in half"
       for d in ("f16", "bf16")},
    # interpolate's new modes and ranks: the same as the 4-D nearest and bilinear above (torch's
    # nearest refuses int32/int64/bool, its CPU bicubic takes uint8) ...
    **{f"nn resize {a} {p} out": "torch's nearest interpolate refuses int32/int64/bool"
       for a in ("i32", "i64", "bool") for p in ("n1d", "n3d", "ne3d")},
    **{f"nn resize u8 {p} out": "torch's CPU bicubic interpolate takes uint8"
       for p in ("bic2", "bic57a", "bic23", "bic15")},
    # ... and torch's float32 CPU bicubic backward at scale factors (1.5, 2.5) is 2.3e-4 from
    # float64's, gpulab's 3.5e-5 (measured): torch keeps the scale and its sums in float32.
    "nn resize f32 bic15 x": "torch's float32 bicubic backward rounds more (gpulab nearer float64)",
    # grid_sample: torch's CPU kernel computes float16/bfloat16 in their own precision; gpulab
    # computes them in float32 and rounds once, several times nearer float64 (measured, e.g.
    # bicubic bf16 grid gradient 0.68 against torch's 5.0, bilinear f16 input gradient 5.2e-3
    # against 3.1e-2). torch's float32 bicubic grid gradient sums sixteen taps in its own
    # order: both sides within 7.5e-5 of float64 (gpulab 6.7e-5), past the per-element
    # tolerance on small elements.
    **{f"nn gsamp {d} {p} {w}": "torch's CPU half grid_sample rounds in half (gpulab nearer float64)"
       for d in ("f16", "bf16") for p in NN_MORE["gsamp"] for w in ("out", "x", "g")},
    **{f"nn gsamp3 {d} {p} {w}": "torch's CPU half grid_sample rounds in half (gpulab nearer float64)"
       for d in ("f16", "bf16") for p in NN_MORE["gsamp3"] for w in ("out", "x", "g")},
    **{f"nn gsamp f32 {p} g": "bicubic grid gradient: float32 rounding, both near float64"
       for p in ("cz", "cb", "cr", "cba")},
    # torch's CPU smooth_l1_loss has no float16 backward ("not implemented for 'Half'"); its
    # CUDA one and gpulab's have one.
    **{f"nn {op} f16 f16 {w}": "torch's CPU smooth_l1_loss backward refuses float16"
       for op in ("smoothl1", "smoothl1_sum", "smoothl1_none") for w in ("x", "y")},
    # torch's CPU convolves integers only undilated ("slow_conv_dilated" has no integer
    # kernels; "same" here has dilation (1, 2)); gpulab's integer conv2d is the same gather
    # and matmul whatever the dilation.
    **{f"nn conv {a} {p} out": "torch's CPU has no integer dilated convolution"
       for a in ("i32", "u8") for p in ("d2p2", "same", "dw")},
    # ... nor transposes convolutions of int32 or uint8 ("slow_conv_transpose2d").
    **{f"nn convT {a} {p} out": "torch's CPU has no int32/uint8 transposed convolution"
       for a in ("i32", "u8") for p in ("k2s2", "s2p1o1", "g2d2")},
    **{f"nn convT3d {a} {p} out": "torch's CPU has no int32/uint8 transposed convolution"
       for a in ("i32", "u8") for p in ("k2s2", "s2p1o1", "g2d2", "unb")},
    **{f"nn convT1d {a} {p} out": "torch's CPU has no int32/uint8 transposed convolution"
       for a in ("i32", "u8") for p in ("k3s2", "p1o1", "g2d2", "unb")},
    **{f"nn unb2d {a} convT out": "torch's CPU has no int32/uint8 transposed convolution"
       for a in ("i32", "u8")},
    # (torch's CPU avg_pool2d takes int64, its CUDA one does not, as above.)
    **{f"nn {op} i64 {p} out": "torch's CPU avg_pool2d takes int64, its CUDA one does not"
       for op, p in (("unb2d", "avg"), ("avgdiv", "k2d3"), ("avgdiv", "k3s2p1cd5"), ("avgdiv", "unb"))},
    # torch's CPU ctc_loss has no half kernels; gpulab computes halves in float32.
    **{f"nn ctc {d} {p} {w}": "torch's CPU ctc_loss has no float16/bfloat16 kernel"
       for d in ("f16", "bf16") for p in NN_MORE["ctc"] for w in ("out", "x")},
    # A target the frames cannot reach: torch's gradient is NaN for that sample, gpulab's 0
    # (the loss is infinite and constant there).
    **{f"nn ctc {d} short x": "an unreachable target: torch's gradient is NaN, gpulab's 0"
       for d in ("f32", "f64")},
    # gpulab's nearest resize is an index_select, for every dtype; torch's CPU kernel
    # takes uint8 and floats only.
    **{f"nn interp {a} {p} out": "torch's nearest interpolate refuses int32/int64/bool"
       for a in ("i32", "i64", "bool") for p in ("n2", "n57", "n07", "ne57", "ne15")},
    # torch's CPU bilinear takes uint8 images (rounding in its own fixed-point kernels);
    # gpulab asks for a float input.
    **{f"nn interp u8 {p} out": "torch's CPU bilinear interpolate takes uint8"
       for p in ("b2", "b57a", "b15", "b23")},
    # Recurrent layers in float16/bfloat16: outputs and states agree, but gradients through
    # time gather rounding differently (torch fuses each bias into its matmul, addmm, and
    # rounds once; gpulab rounds the product, then the sum), a few units in the last place
    # after three steps. float32 and float64 agree throughout.
    **{f"rnn {op} {d} {w}": "half-precision gradients through time round differently"
       for op in RNNS for d in ("f16", "bf16") for w in ("x", "h0", "wih", "whh", "bhh")},
    # Decoder layers and transformer stacks in float32 and halves: every output and gradient
    # of gpulab's and torch's is within the same distance of torch's float64 result (measured
    # from this recording: at most 3.6e-7 of the largest element in float32, 3.6e-3 in
    # float16, and 0.22 for the bfloat16 gradients of the cross-attention both sides share),
    # neither consistently nearer; the per-element tolerance fails on small elements next
    # to large ones. float64 agrees everywhere.
    **{f"tfm {op} {d} {w}": "a transformer's rounding: both sides equally close to float64"
       for op, d, ws in (("dec", "f16", "inw outw mem"), ("dec", "bf16", "inw outw mem"),
                         ("dec_pre", "f32", "q inw mem"), ("dec_pre", "f16", "out q inw outw mem"),
                         ("dec_pre", "bf16", "q inw outw mem"), ("encstack", "f32", "inw q"),
                         ("encstack", "f16", "q inw outw"), ("encstack", "bf16", "q inw outw"),
                         ("tfm", "f16", "q inw outw mem"), ("tfm", "bf16", "q inw mem"))
       for w in ws.split()},
    # An RNNCell stepped twice in bfloat16: the input-weight gradient is the sum of one
    # bfloat16 product per step, and gpulab's and torch's differ there by a few units in the
    # last place (every other output, state and gradient of the cells agrees in every dtype).
    "cell rnncell bf16 wih": "bfloat16 gradient summed over two steps rounds differently",
    # A bidirectional GRU's float32 gradients: gpulab's and torch's are each within 4.9e-6
    # of the float64 result (the largest element is 55) and 5.7e-6 apart, which is beyond
    # the per-element tolerance on the elements near 0. float64 agrees to 1e-12.
    **{f"rnn gru_bi f32 {w}": "float32 rounding through two directions, both sides equally "
       "close to float64" for w in ("x", "wih")},
    # MultiheadAttention in float16/bfloat16: outputs and weights agree, gradients are a few
    # ulps apart (torch fuses bias and mask into addmm/baddbmm and rounds once; gpulab rounds
    # the product, then the sum). float32 and float64 agree.
    **{f"attn {op} {d} {w}": "half-precision multi-head attention gradients round differently"
       for op in ("mha", "mha_cross", "mha_kpm", "mha_amask") for d in ("f16", "bf16")
       for w in ("q", "inw", "outw")},
    # A whole encoder layer (attention, feed-forward, two layer norms) in float32 and halves:
    # gpulab's and torch's results are each as far from the float64 result as the other (both
    # about 1e-7 of the largest value in float32, 1e-3 in float16, 1e-2 in bfloat16), but the
    # per-element tolerance fails on small elements next to large ones. float64 agrees.
    **{f"attn {op} {d} {w}": "an encoder layer's rounding: both sides equally close to float64"
       for op in ("enc", "enc_pre", "enc_kpm") for d in ("f32", "f16", "bf16")
       for w in ("q", "inw", "outw")},
    **{f"attn enc_pre {d} out": "an encoder layer's rounding: both sides equally close to float64"
       for d in ("f16", "bf16")},
    # An LSTM in a CPU autocast region: torch 2.9's oneDNN kernel refuses the lowered layer
    # here ("could not create a primitive descriptor for the LSTM forward propagation
    # primitive"); gpulab runs it in the lower precision, as torch's CUDA (cuDNN) LSTM does.
    **{f"amp lstm {d} {w}": "torch's CPU LSTM under autocast fails in oneDNN"
       for d in ("bf16", "f16") for w in ("out", "x", "w", "b")},
    # A GRU in a CPU autocast region: torch's CPU GRU is composed of per-step linears (lowered)
    # and a float32 initial state, so its output comes out float32; its CUDA (cuDNN) GRU, like
    # gpulab's on every device, runs the whole layer in the lower precision.
    **{f"amp gru {d} out": "torch's CPU GRU under autocast keeps a float32 state"
       for d in ("bf16", "f16")},
    # atan2's backward in torch squares a bfloat16 operand in bfloat16 before adding the other
    # (float32 or float64) one; gpulab promotes first, which gives the float64 answer.
    **{f"{k} atan2 bf16 {b} y": "torch squares the bfloat16 operand in bfloat16 in atan2's backward"
       for k in ("grad", "rgrad") for b in ("f32", "f64")},
    # torch's CPU cdist has no float16/bfloat16 kernel; gpulab computes the distances in the
    # tensors' dtype, as its other reductions.
    **{f"more {op} {d} {w}": "torch's CPU cdist has no half-precision kernel"
       for op in ("cdist", "cdist_p1", "cdist_inf", "cdist_p0", "cdist_p3", "cdist_self")
       for d in ("f16", "bf16") for w in ("out", "x")},
    # The 1-D forms keep their 2-D versions' dtype rules in gpulab (they are those ops on a
    # height of 1); torch's CPU has separate 1-D kernels: a dilated integer conv1d fails as
    # conv2d does, max_pool1d refuses integers (max_pool2d takes them), avg_pool1d takes
    # int64 as avg_pool2d does.
    **{f"more conv1d_same {a} out": "torch's CPU has no integer dilated convolution"
       for a in ("i32", "u8")},
    **{f"more {op} {a} out": "torch's CPU max_pool1d refuses integers, its max_pool2d does not"
       for op in ("max_pool1d", "max_pool1d_pad") for a in ("i32", "i64", "u8")},
    **{f"more {op} i64 out": "torch's CPU avg_pool1d takes int64, its CUDA one does not"
       for op in ("avg_pool1d", "avg_pool1d_pad")},
    # torch's CPU im2col/col2im take bool (and floats) but no integer dtype; gpulab's take
    # floats only.
    **{f"more {op} bool out": "torch's CPU unfold/fold take bool"
       for op in ("unfold", "unfold_pad", "unfold_3d", "fold", "fold_overlap")},
    # torch's float64 hardsigmoid gradient is 1/6 rounded to float32 (a float literal in its
    # kernel); gpulab's is 1/6 in float64.
    **{f"more {op} f64 x": "torch's float64 hardsigmoid gradient uses a float32 1/6"
       for op in ("hardsigmoid", "hardsigmoid_wide")},
    # torch wants int64 class indices; gpulab takes any integer dtype.
    **{f"nn ce {a} i32 {w}": "torch wants int64 class indices" for a in FLOATS for w in ("out", "x")},
    # Half-precision gradients through a GRU with weight-normed weights (outputs agree): the
    # GRU's backward rounds in another order; measured against float64 as a share of the
    # largest element, gpulab's worst is 2.5e-3 (float16) and 1.2e-2 (bfloat16), torch's
    # 1.6e-3 and 9.7e-3, and on most of these gpulab's is the nearer.
    **{f"param {op} {d} {w}": "half-precision GRU gradients round differently (both near float64)"
       for op, d, w in [(o, d, w) for o in ("wn_old_gru_hh",) for d, ws in
                        (("f16", ("x", "p0", "p1", "p2", "p4")), ("bf16", ("x", "p0", "p3"))) for w in ws]
       + [("wn_old_gru_both", "f16", "x")]
       + [("wn_old_gru_both", "bf16", w) for w in ("x", "p2", "p3", "p4", "p5")]},
    # The half-precision gradient of spectral norm's original weight, through w / sigma and
    # sigma = u . (W v): a few ulps apart (against float64: gpulab 7.7e-4, torch 4.1e-4 in
    # float16 for sn_lin; 3.8e-4 and 6.9e-4 for sn_convT; equal in bfloat16).
    **{f"param {op} {d} p1": "half-precision spectral-norm gradients round differently"
       for op, d in (("sn_lin", "f16"), ("sn_lin", "bf16"), ("sn_convT", "f16"))},
}


# Optimizer state entries compared after three steps: (optimizer, config, key).
OPTIM_STATE = [("sgd", "mom", "momentum_buffer"), ("adam", "betas", "exp_avg"),
               ("adam", "betas", "exp_avg_sq"), ("adam", "plain", "step"),
               ("adamw", "wd", "exp_avg_sq"), ("rmsprop", "mom", "square_avg"),
               ("rmsprop", "mom", "momentum_buffer"), ("rmsprop", "plain", "step")]




def cases():
    floats = [d for d in DTYPES if d in FLOATS]
    out = []
    for op in BINARY:
        out += [f"bin {op} {a} {b}" for a in DTYPES for b in DTYPES]
        out += [f"tbin {op} {a} {a}" for a in DTYPES]
        # torch's CPU kernels trap (SIGFPE, the whole process) on int32's minimum divided by
        # -1, which the int32 special values hold; gpulab wraps, as for int64.
        out += [f"sbin {op} {a} {a}" for a in DTYPES
                if not (a == "i32" and op in ("fmod", "remainder", "floor_divide"))]
        if op not in ("maximum", "minimum", "logical_and", "logical_or", "atan2"):  # tensors only
            out += [f"bins {op} {a} {s}" for a in DTYPES for s in SCALARS]
    for op in CLAMPS:
        out += [f"bins {op} {a} {s}" for a in DTYPES for s in SCALARS]
        out += [f"{k} {op} {a} {s} x" for k in ("grad", "sgrad") for a in floats for s in SCALARS]
    for op in INPLACE:
        out += [f"inp {op} {a} {b}" for a in DTYPES for b in DTYPES]
        out += [f"inps {op} {a} {s}" for a in DTYPES for s in SCALARS]
    for op in UNARY:
        out += [f"un {op} {a}" for a in DTYPES] + [f"sun {op} {a}" for a in DTYPES]
    for op in REDUCE:
        out += [f"red {op} {a}" for a in DTYPES] + [f"sred {op} {a}" for a in DTYPES]
    out += [f"not x {a}" for a in DTYPES]
    # row/col broadcast a slice; zero/zlhs put a zero-dimensional tensor on the right/left,
    # which takes part in promotion only when its category is higher (torch.result_type).
    for kind in ("row", "col", "zero", "zlhs"):
        out += [f"{kind} {op} {a} {b}" for op in ("add", "mul", "maximum", "eq", "lt", "pow", "div", "sub")
                for a in DTYPES for b in DTYPES]
    for kind in ("cast", "where", "zwhere", "cat", "stack", "matmul", "tmatmul"):
        out += [f"{kind} x {a} {b}" for a in DTYPES for b in DTYPES]
    # Gradients: float inputs require grad; an integer operand gets none (both sides say so).
    for op in GRAD_BINARY:
        for which in "xy":
            out += [f"grad {op} {a} {b} {which}" for a in floats for b in DTYPES]
            out += [f"rgrad {op} {a} {b} {which}" for a in floats for b in floats]
            out += [f"sgrad {op} {a} {a} {which}" for a in floats]
        # A scalar operand (maximum/minimum with a scalar are torch's clamp_min/clamp_max;
        # torch's atan2 takes tensors only).
        if op != "atan2":
            out += [f"{k} {op} {a} {s} x" for k in ("grad", "sgrad") for a in floats for s in SCALARS]
    for op in UNARY + [f"red_{r}" for r in GRAD_REDUCE]:
        out += [f"{k} {op} {a} - x" for k in ("grad", "sgrad") for a in floats]
    out += [f"grad matmul {a} {b} {w}" for a in floats for b in floats for w in "xy"]
    # The layers' functions, forward and backward.
    for a in DTYPES:
        for b in DTYPES:
            out += [f"nn {op} {a} {b} {want}" for op in ("mse", "bce") for want in ("out", "x", "y")]
        out += [f"nn ce {a} {t} {want}" for t in ("i64", "i32", "u8") for want in ("out", "x")]
        out += [f"nn conv {a} {p} {want}" for p in ("s1p0", "s2p1", "s1p1", "d2p2", "g2", "same", "dw")
                for want in ("out", "x", "w", "b")]
        out += [f"nn convT {a} {p} {want}" for p in ("k2s2", "s2p1o1", "g2d2")
                for want in ("out", "x", "w", "b")]
        out += [f"nn interp {a} {p} {want}" for p in ("n2", "n57", "n07", "ne57", "ne15", "b2",
                                                       "b57a", "b15", "b23") for want in ("out", "x")]
        out += [f"nn pool {a} {p} {want}" for p in ("k2s2", "k3s1", "k2s1", "k3s2p1", "k2s1p1",
                                                     "k2s2c", "k3s2p1d2c", "k23s12c")
                for want in ("out", "x")]
        out += [f"nn avgpool {a} {p} {want}" for p in ("k2s2", "k3s1p1", "k2s1", "k3s2p1", "k3s2p1x",
                                                        "k3s2p1c", "k3s2p1cx", "k23s21c")
                for want in ("out", "x")]
        out += [f"nn adapool {a} {p} {want}" for p in ("o1x1", "o2x2", "o4x3", "o5x5", "o7x6")
                for want in ("out", "x")]
        out += [f"nn emb {a} {t} {want}" for t in ("i64", "i32", "u8", "f32") for want in ("out", "w")]
        out += [f"nn nll {a} {t} {want}" for t in ("i64", "u8") for want in ("out", "x")]
    for a in floats:
        out += [f"nn {op} {a} {a} {want}" for op in ("l1", "smoothl1", "smoothl1_b0", "huber", "bcep")
                for want in ("out", "x", "y")]
        # torch's reduction='sum' and 'none' (the loss modules' `.reduction`).
        for red in ("sum", "none"):
            out += [f"nn {op}_{red} {a} {a} {want}" for op in ("mse", "l1", "smoothl1", "huber", "bce", "bcep")
                    for want in ("out", "x", "y")]
            out += [f"nn {op}_{red} {a} i64 {want}" for op in ("ce", "nll") for want in ("out", "x")]
    # Rearranging layers, the scale-only norms, power-average and adaptive pools, pdist.
    for a in DTYPES:
        for op, params in NN_MORE.items():
            for p in params:
                wants = ("out", "x", "w") if (op, p) == ("rms", "w") else ("out", *NN_WANTS.get(op, ("x",)))
                out += [f"nn {op} {a} {p} {want}" for want in wants]
    # Gradient clipping: the norm returned and the gradients after, over two parameters.
    out += [f"clip {k} {a} {v}" for k in ("norm", "value") for a in floats for v in ("0.5", "100")]
    # Views and index ops, forward and backward.
    out += [f"view {op} {a} {want}" for op in VIEWS for a in DTYPES for want in ("out", "x", "y")]
    out += [f"arange {c} x" for c in ("int", "float", "step", "down", "tenth", "empty", "zero_step", "wrong_way")]
    out += [f"empty {op} {a} {s} {want}" for op in EMPTY_OPS for a in ("f32", "i64") for s in EMPTY_SHAPES
            for want in ("out", "x")]
    out += [f"empty {op} f32 - {want}" for op in EMPTY_NN for want in ("out", "x")]
    out += [f"more {op} {a} {want}" for op in MORE for a in DTYPES for want in ("out", "x")]
    out += [f"more {op} f32 out" for op in MORE_MADE + MORE_MADE_EXTRA]
    for a in floats:
        out += [f"attn {op} {a} {want}" for op in ("sdpa", "sdpa_causal", "sdpa_bool", "sdpa_float",
                                                   "sdpa_scale") for want in ("out", "q", "k", "v")]
        out += [f"attn {op} {a} {want}" for op in ("mha", "mha_cross", "mha_kpm", "mha_amask")
                for want in ("out", "w", "q", "inw", "outw")]
        out += [f"attn {op} {a} {want}" for op in ("enc", "enc_pre", "enc_kpm")
                for want in ("out", "q", "inw", "outw")]
    for op in RNNS:
        wants = ("out", "hn", "x", "h0", "wih", "whh", "bhh") + (("cn",) if op.startswith("lstm") else ())
        out += [f"rnn {op} {a} {want}" for a in floats for want in wants]
    # Transformer decoder layers and stacks (a causal target mask throughout).
    out += [f"tfm {op} {a} {want}" for op in ("dec", "dec_pre", "encstack", "tfm") for a in floats
            for want in ("out", "q", "inw", "outw") + (() if op == "encstack" else ("mem",))]
    for op in CELLS:
        wants = ("out", "x", "h0", "wih", "whh", "bhh") + (("cn",) if op.startswith("lstm") else ())
        out += [f"cell {op} {a} {want}" for a in floats for want in wants]
    out += [f"norm {op} {a} {want}" for op in NORMS for a in floats
            for want in ("out", "x", "w", "b") + (("rm", "rv") if op.startswith("bn") else ())]
    out += [f"norm {op} {a} {want}" for op, wants in NORM_OPTIONS.items() for a in floats for want in wants]
    out += [f"prune {op} {a} {want}" for op in PRUNES for a in floats for want in ("out", "x", "p0", "p1", "b0")]
    out += [f"prune {op} {a} {want}" for op in GLOBAL_PRUNES for a in floats for want in ("out", "x", "m0", "m1")]
    out += [f"func {op} {a} {want}" for op, wants in FUNCS.items() for a in floats for want in wants]
    out += [f"jac {op} {a} {want}" for op, wants in JACS.items() for a in floats for want in wants]
    out += [f"agrad {op} {a} {want}" for op, wants in AGRADS.items() for a in floats for want in wants]
    out += [f"fcall {op} {a} {want}" for op, wants in FCALLS.items() for a in floats for want in wants]
    out += [f"param {op} {a} {want}" for op, n in PARAMS.items() for a in PARAM_DTYPES.get(op, floats)
            for want in ("out", "x", *(f"p{k}" for k in range(n)), *(f"b{k}" for k in range(PARAM_BUFFERS[op])))]
    # Optimizers: a parameter after three steps.
    out += [f"optim sgd {a} {c}" for a in floats for c in ("plain", "mom", "momwd")]
    out += [f"optim adam {a} {c}" for a in floats for c in ("plain", "wd", "betas")]
    out += [f"optim adamw {a} {c}" for a in floats for c in ("plain", "wd")]
    out += [f"optim rmsprop {a} {c}" for a in floats for c in ("plain", "mom", "wdalpha")]
    # ... and its state after those steps, as `state_dict()` holds it (torch's `opt.state[p]`).
    out += [f"optim {o} {a} {c} {k}" for a in floats for o, c, k in OPTIM_STATE]
    # Mixed precision: the result and the float32 gradients (of the input, a weight, a bias).
    out += [f"amp {op} {d} {want}" for op in AMP for d in ("bf16", "f16") for want in ("out", "x", "w", "b")]
    out += [f"amp64 {op} f64 {want}" for op in AMP for want in ("out", "x", "w", "b")]
    out += [f"scaler {c} f32 x" for c in SCALERS]
    # Learning-rate schedules: the rate after each of 14 epochs.
    out += [f"cls {op} {d} {want}" for op in CLS for d in ("f32", "f64", "f16", "bf16")
            for want in ("out", "x")]
    out += [f"scat {op} {d} {want}" for op in SCAT for d in DTYPES for want in ("out", "x", "y")]
    out += [f"einsum {op} {d} {want}" for op in EINSUM for d in DTYPES for want in ("out", "x", "y")]
    out += [f"adv {op} {d} {want}" for op in ADV for d in DTYPES
            for want in (("out",) if op.startswith("set_") else ("out", "x", "y"))]
    out += [f"sched {s} f64 x" for s in ("step", "exp", "cos", "cos_min", "multistep", "linear",
                                         "linear_up", "plateau", "plateau_max", "plateau_abs", "lambda",
                                         "warm_restarts", "warm_restarts_flat")]
    return out


def values(d, which):
    """Mirrors `values` in torch_parity.rs."""
    big = 9007199254740992.0
    if d == "u8":
        return [[0., 1, 2, 3, 5, 7], [1., 0, 3, 2, 2, 1], [255., 0, 128, 1, 254, 3]][which]
    if d == "bool":
        return [[1., 0, 1, 1, 0, 0], [1., 1, 0, 1, 0, 1], [1., 1, 1, 0, 0, 0]][which]
    if d in ("i32", "i64"):
        special = [2147483647., -2147483648., -1, 0, 1, 7] if d == "i32" else [big, -big, -1, 0, 1, 7]
        return [[-3., -1, 0, 1, 2, 7], [2., -1, 0, 3, 1, -2], special][which]
    return [[-3, -1.5, 0, 0.5, 2, 7.25], [2, -1.25, 0.5, 3, 1, -2],
            [math.nan, math.inf, -math.inf, 131008.0, 1e-8, -0.0]][which]


def torch_results(lines, device):
    import torch

    T = {"f32": torch.float32, "f64": torch.float64, "f16": torch.float16, "bf16": torch.bfloat16,
         "i32": torch.int32, "i64": torch.int64, "u8": torch.uint8, "bool": torch.bool}
    names = {torch.float32: "F32", torch.float64: "F64", torch.float16: "F16", torch.bfloat16: "BF16",
             torch.int32: "I32", torch.int64: "I64", torch.uint8: "U8", torch.bool: "Bool"}
    dev = torch.device(device)

    def mk(d, which):
        return torch.tensor(values(d, which), dtype=torch.float64).reshape(2, 3).to(T[d]).to(dev)

    def scalar(s):
        return float(s) if "." in s else int(s)

    def binary(op, a, rhs):
        if op == "clamp":
            return torch.clamp(a, rhs, 2)
        if op in ("clamp_min", "clamp_max"):
            return getattr(torch, op)(a, rhs)
        if op.endswith("_"):
            getattr(a, op)(rhs)
            return a
        return getattr(torch, op)(a, rhs)

    def reduce(op, a):
        if op == "sum_keepdim":
            return torch.sum(a, 1, keepdim=True)
        if op in ("var_dim", "std_dim"):
            return getattr(torch, op[:3])(a, 1 if op == "var_dim" else 0)
        if op.endswith("_dim"):
            r = getattr(torch, op[:-4])(a, 1)
            return r.values if op in ("max_dim", "min_dim") else r
        return getattr(torch, op)(a)

    def gradient(w):
        kind, op = w[0], w[1]
        x = mk(w[2], 2 if kind == "sgrad" else 0).requires_grad_()
        is_scalar = w[3] != "-" and w[3].lstrip("-").replace(".", "", 1).isdigit()
        y = None if w[3] == "-" or is_scalar else mk(w[3], 1)
        if y is not None and y.is_floating_point():
            y.requires_grad_()
        if is_scalar:
            s = scalar(w[3])
            clamp = {"maximum": {"min": s}, "minimum": {"max": s}}
            out = torch.clamp(x, **clamp[op]) if op in clamp else binary(op, x, s)
        elif y is None and "softmax" in op:
            out = getattr(torch, op)(x, 1)
        elif y is None:
            out = reduce(op[4:], x) if op.startswith("red_") else getattr(torch, op)(x)
        elif op == "matmul":
            out = x @ y.t()
        else:
            out = getattr(torch, op)(x, y[1] if kind == "rgrad" else y)
        weighted_backward(out)
        g = (y if w[4] == "y" else x).grad if (w[4] == "x" or y is not None) else None
        if g is None:
            raise ValueError("no gradient")
        return g

    def ramp(shape, m, off, scale, d):
        n = math.prod(shape)
        v = [((i % m) - off) * scale for i in range(n)]
        t = torch.tensor([abs(x) for x in v] if d == "u8" else v, dtype=torch.float64)
        t = t.reshape(shape).to(T[d]).to(dev)
        return t.requires_grad_() if t.is_floating_point() else t

    def weighted_backward(out):
        weights = torch.arange(1, out.numel() + 1, dtype=torch.float32).reshape(out.shape)
        (out * weights.to(out.dtype).to(dev)).sum().backward()

    def nn_more(op, d, param):
        """Mirrors `nn_more` in torch_parity.rs: (output, inputs by name)."""
        F = torch.nn.functional
        if op in ("pixshuf", "pixunshuf"):
            r = int(param[1:])
            shape = {("pixshuf", 2): [1, 8, 2, 3], ("pixshuf", 3): [2, 9, 1, 2],
                     ("pixunshuf", 2): [1, 2, 4, 6], ("pixunshuf", 3): [2, 1, 3, 6]}[(op, r)]
            x = ramp(shape, 7, 3.0, 0.5, d)
            return (F.pixel_shuffle if op == "pixshuf" else F.pixel_unshuffle)(x, r), {"x": x}
        if op == "chshuf":
            g = int(param[1:])
            x = ramp([1, 6, 2, 2] if g == 2 else [2, 6, 3], 7, 3.0, 0.5, d)
            return F.channel_shuffle(x, g), {"x": x}
        if op == "rms":
            shape, norm, eps = {"w": ([2, 3], [3], None), "n2": ([2, 2, 3], [2, 3], None),
                                "e01": ([3, 4], [4], 0.1)}[param]
            x = ramp(shape, 7, 3.0, 0.5, d)
            if param == "w":
                wt = ramp(norm, 4, 1.0, 0.5, d)
                return F.rms_norm(x, norm, wt, eps), {"x": x, "w": wt}
            return F.rms_norm(x, norm, None, eps), {"x": x}
        if op == "lrn":
            shape, size, alpha, beta, k = {"s3": ([1, 5, 2, 3], 3, 0.1, 0.75, 1.0),
                                           "s2": ([2, 4, 3], 2, 1e-4, 0.75, 1.0),
                                           "s4": ([1, 6, 2, 2], 4, 0.3, 0.5, 2.0)}[param]
            x = ramp(shape, 7, 3.0, 0.5, d)
            return F.local_response_norm(x, size, alpha, beta, k), {"x": x}
        if op in ("lppool", "lppool1"):
            p, kernel, stride, ceil = {"p2k2": (2.0, 2, None, False), "p3k3s2c": (3.0, 3, 2, True),
                                       "p1k2s1": (1.0, 2, 1, False), "p15k2": (1.5, 2, None, False)}[param]
            # Negative values only where the power keeps them real.
            off = 3.0 if param == "p2k2" else 0.0
            if op == "lppool":
                x = ramp([1, 2, 5, 5], 7, off, 0.5, d)
                return F.lp_pool2d(x, p, kernel, stride, ceil), {"x": x}
            x = ramp([2, 3, 7], 7, off, 0.5, d)
            return F.lp_pool1d(x, p, kernel, stride, ceil), {"x": x}
        if op in ("adamax", "adamaxi"):
            x = ramp([1, 2, 5, 5], 7, 3.0, 0.5, d)
            size = tuple(int(v) for v in param[1:].split("x"))
            values, idx = F.adaptive_max_pool2d(x, size, return_indices=True)
            return (values if op == "adamax" else idx), {"x": x}
        if op in ("adaavg1", "adamax1"):
            x = ramp([2, 3, 7] if param == "o3" else [3, 7], 5, 2.0, 0.5, d)
            f = F.adaptive_avg_pool1d if op == "adaavg1" else F.adaptive_max_pool1d
            return f(x, int(param[1:])), {"x": x}
        if op == "pdist":
            x = ramp([4, 3], 5, 2.0, 0.75, d)
            p = {"p2": 2.0, "p1": 1.0, "pinf": math.inf, "p0": 0.0, "p3": 3.0}[param]
            return F.pdist(x, p), {"x": x}
        if op == "pooli":
            # The "pool" cases' input: many ties, which go to the first.
            x = ramp([1, 2, 5, 6], 4, 0.0, 1.0, d)
            kernel, stride, pad, dil, ceil = {
                "k2s2": (2, 2, 0, 1, False), "k3s2p1": (3, 2, 1, 1, False),
                "k3s2p1d2c": (3, 2, 1, 2, True), "k23s12c": ((2, 3), (1, 2), 1, (1, 2), True)}[param]
            _, idx = F.max_pool2d(x, kernel, stride, pad, dil, ceil_mode=ceil, return_indices=True)
            return idx, {"x": x}
        if op == "pool1i":
            x = ramp([2, 3, 7], 4, 0.0, 1.0, d)
            kernel, stride, pad, ceil = {"k2s2": (2, 2, 0, False), "k3s2p1c": (3, 2, 1, True)}[param]
            _, idx = F.max_pool1d(x, kernel, stride, pad, ceil_mode=ceil, return_indices=True)
            return idx, {"x": x}
        if op == "unpool":
            x = ramp([1, 2, 5, 6], 7, 3.0, 0.5, d)
            kernel, stride, pad, size = {"k2s2": (2, 2, 0, None), "k3s2p1": (3, 2, 1, (5, 6)),
                                         "k2s2o": (2, 2, 0, (5, 6))}[param]
            v, i = F.max_pool2d(x, kernel, stride, pad, return_indices=True)
            return F.max_unpool2d(v, i, kernel, stride, pad, output_size=size), {"x": x}
        if op == "unpool1":
            x = ramp([2, 3, 7], 7, 3.0, 0.5, d)
            kernel, stride, pad, size = {"k2s2": (2, 2, 0, [7]), "k3s1p1": (3, 1, 1, None)}[param]
            v, i = F.max_pool1d(x, kernel, stride, pad, return_indices=True)
            return F.max_unpool1d(v, i, kernel, stride, pad, output_size=size), {"x": x}
        return nn_3d(op, d, param)

    def nn_3d(op, d, param):
        """Mirrors `nn_3d` in torch_parity.rs: conv3d, the 3-D pools, BatchNorm3d, ..."""
        F = torch.nn.functional
        if op == "conv3d":
            xs, ws, stride, pad, dil, groups = {
                "s1p0": ([1, 2, 3, 4, 4], [3, 2, 2, 3, 3], 1, 0, 1, 1),
                "s2p1": ([2, 2, 4, 5, 5], [2, 2, 3, 3, 3], 2, 1, 1, 1),
                "d2g2": ([1, 4, 5, 5, 6], [2, 2, 2, 2, 3], (1, 1, 2), (1, 0, 1), (2, 1, 1), 2),
                "same": ([1, 2, 4, 4, 5], [2, 2, 2, 3, 2], 1, "same", 1, 1),
                "unb": ([2, 3, 4, 4], [2, 2, 2, 2, 2], 1, 1, 1, 1)}[param]
            x = ramp(xs, 7, 3.0, 0.25, d)
            w = ramp(ws, 5, 2.0, 0.5, d)
            b = ramp([ws[0]], 3, 1.0, 0.5, d)
            return F.conv3d(x, w, b, stride, pad, dil, groups), {"x": x, "w": w, "b": b}
        if op in ("pool3d", "pool3di"):
            # Ties on purpose: they go to the first maximum in depth, row, column order.
            kernel, stride, pad, dil, ceil = {
                "k2": (2, None, 0, 1, False), "k3s2p1": (3, 2, 1, 1, False),
                "k3s2p1d2c": (3, 2, 1, 2, True), "k122s1": ((1, 2, 2), 1, 0, 1, False),
                "unb": (2, 1, 1, 1, False)}[param]
            x = ramp([2, 4, 5, 5] if param == "unb" else [1, 2, 5, 5, 6], 4, 0.0, 1.0, d)
            v, i = F.max_pool3d(x, kernel, stride, pad, dil, ceil_mode=ceil, return_indices=True)
            return (v if op == "pool3d" else i), {"x": x}
        if op == "avg3d":
            kernel, stride, pad, ceil, inc, div = {
                "k2": (2, None, 0, False, True, None), "k3s2p1": (3, 2, 1, False, True, None),
                "k3s2p1c": (3, 2, 1, True, True, None), "k3s2p1cx": (3, 2, 1, True, False, None),
                "k2div3": (2, 1, 0, False, True, 3), "unb": ((2, 2, 1), 1, (1, 0, 0), False, True, None)}[param]
            x = ramp([2, 4, 5, 5] if param == "unb" else [1, 2, 5, 5, 6], 7, 3.0, 0.5, d)
            return F.avg_pool3d(x, kernel, stride, pad, ceil, inc, div), {"x": x}
        if op == "bn3d":
            m = torch.nn.BatchNorm3d(2).to(dev).to(T[d]) if T[d].is_floating_point else None
            if m is None:
                raise ValueError("BatchNorm3d takes floats")
            params = set_ramps(m, 0.5, d)
            x = ramp([2, 2, 2, 3, 3], 7, 3.0, 0.5, d)
            return m(x), {"x": x, **params}
        if op == "in3d":
            x = ramp([2, 2, 2, 3, 3], 7, 3.0, 0.5, d)
            return F.instance_norm(x), {"x": x}
        if op == "drop3d":
            x = ramp([2, 2, 2, 3, 3], 7, 3.0, 0.5, d)
            return F.dropout3d(x, 0.5, training=False), {"x": x}
        return nn_extra(op, d, param)

    def nn_extra(op, d, param):
        """Mirrors `nn_extra` in torch_parity.rs: threshold .. the triplet loss with a distance."""
        F = torch.nn.functional
        if op == "thresh":
            x = ramp([2, 7], 7, 3.0, 0.5, d)
            th, val = {"t05v2": (0.5, -2.0), "t0v0": (0.0, 0.0)}[param]
            return F.threshold(x, th, val), {"x": x}
        if op == "smax2d":
            x = ramp([2, 3, 2, 2] if param == "b" else [3, 2, 2], 7, 3.0, 0.5, d)
            return torch.nn.Softmax2d()(x), {"x": x}
        if op == "rrelu":
            lower, upper = {"eval": (1 / 8, 1 / 3), "eval_wide": (0.1, 0.9)}[param]
            x = ramp([2, 7], 7, 3.0, 0.5, d)
            return F.rrelu(x, lower, upper, training=False), {"x": x}
        if op == "bilin":
            lead = [2, 3] if param == "lead" else [3]
            x1 = ramp(lead + [4], 7, 3.0, 0.5, d)
            x2 = ramp(lead + [2], 5, 2.0, 0.5, d)
            w = ramp([3, 4, 2], 5, 2.0, 0.25, d)
            b = ramp([3], 3, 1.0, 0.5, d)
            bias = None if param == "nob" else b
            return F.bilinear(x1, x2, w, bias), {"x1": x1, "x2": x2, "w": w, "b": b}
        if op == "tripletd":
            a = ramp([3, 4], 7, 3.0, 0.5, d)
            p = ramp([3, 4], 5, 2.0, 0.5, d)
            n = ramp([3, 4], 3, 1.0, 0.75, d)
            dist = (lambda u, v: 1.0 - F.cosine_similarity(u, v)) if param == "cos" else None
            red = "sum" if param == "sum" else "mean"
            out = F.triplet_margin_with_distance_loss(a, p, n, distance_function=dist, margin=1.5,
                                                      swap=param == "swap", reduction=red)
            return out, {"a": a, "p": p, "n": n}
        if op == "resize":
            size, mode, align = {
                "lin2": (2.0, "linear", False), "lin7a": (7, "linear", True),
                "lin15": (1.5, "linear", False), "bic2": (2.0, "bicubic", False),
                "bic57a": ((5, 7), "bicubic", True), "bic23": ((2, 3), "bicubic", False),
                "bic15": ((1.5, 2.5), "bicubic", False), "tri2": (2.0, "trilinear", False),
                "tri345a": ((3, 4, 5), "trilinear", True), "area1d": (3, "area", None),
                "area2d": ((2, 3), "area", None), "area3d": ((2, 2, 3), "area", None),
                "areaup": ((5, 7), "area", None), "n1d": (2.0, "nearest", None),
                "n3d": ((3, 4, 5), "nearest", None), "ne3d": (1.5, "nearest-exact", None)}[param]
            rank = 3 if mode == "linear" or param in ("area1d", "n1d") else \
                5 if mode == "trilinear" or param in ("area3d", "n3d", "ne3d") else 4
            x = ramp({3: [1, 2, 5], 4: [1, 2, 3, 4], 5: [1, 2, 2, 3, 4]}[rank], 7, 3.0, 0.5, d)
            factor = isinstance(size, float) or (isinstance(size, tuple) and isinstance(size[0], float))
            if factor:
                out = F.interpolate(x, scale_factor=size, mode=mode, align_corners=align)
            else:
                out = F.interpolate(x, size=size, mode=mode, align_corners=align)
            return out, {"x": x}
        if op in ("adaavg3", "adamax3"):
            size = (2, 3, 4) if param == "unb" else tuple(int(c) for c in param[1:])
            # Ties on purpose for the max: the first in depth, row, column order wins.
            x = ramp([2, 4, 5, 6] if param == "unb" else [1, 2, 4, 5, 6], 5, 2.0, 0.5, d)
            f = F.adaptive_avg_pool3d if op == "adaavg3" else F.adaptive_max_pool3d
            return f(x, size), {"x": x}
        if op == "convT3d":
            xs, ws, stride, pad, opad, groups, dil = {
                "k2s2": ([1, 2, 2, 3, 2], [2, 3, 2, 2, 2], 2, 0, 0, 1, 1),
                "s2p1o1": ([1, 2, 2, 2, 3], [2, 2, 3, 3, 3], 2, 1, 1, 1, 1),
                "g2d2": ([1, 4, 2, 3, 3], [4, 1, 2, 2, 2], (1, 2, 1), (0, 1, 0), 0, 2, (2, 1, 1)),
                "unb": ([2, 2, 2, 2], [2, 1, 2, 3, 2], 1, 0, 0, 1, 1)}[param]
            x = ramp(xs, 7, 3.0, 0.25, d)
            w = ramp(ws, 5, 2.0, 0.5, d)
            b = ramp([ws[1] * groups], 3, 1.0, 0.5, d)
            out = F.conv_transpose3d(x, w, b, stride, pad, opad, groups, dil)
            return out, {"x": x, "w": w, "b": b}
        if op == "gsamp":
            mode = {"b": "bilinear", "n": "nearest", "c": "bicubic"}[param[0]]
            pad = {"z": "zeros", "b": "border", "r": "reflection"}[param[1]]
            x = ramp([1, 2, 4, 5], 7, 3.0, 0.5, d)
            # Points inside and outside [-1, 1], none on a pixel boundary that would make the
            # nearest or the floor ambiguous.
            g = ramp([1, 3, 4, 2], 11, 5.0, 0.27, d)
            return F.grid_sample(x, g, mode=mode, padding_mode=pad, align_corners=param.endswith("a")), \
                {"x": x, "g": g}
        if op == "affine":
            theta = ramp([2, 2, 3], 5, 2.0, 0.4, d)
            return F.affine_grid(theta, [2, 1, 3, 4], align_corners=param == "align"), {"x": theta}
        if op == "ebag":
            w = ramp([6, 3], 5, 2.0, 0.5, d)
            mode = param.split("_")[0].replace("2d", "")
            kw = {"mode": mode}
            if param.endswith("2d"):
                idx, off = torch.tensor([[1, 2, 2, 5], [0, 3, 4, 1], [5, 5, 0, 2]]).to(dev), None
            else:
                idx = torch.tensor([1, 2, 4, 0, 3, 5, 1, 0]).to(dev)
                off = torch.tensor([0, 3, 3, 6] if param != "sum_last" else [0, 3, 3, 8]).to(dev)
            if param == "mean_pad":
                kw["padding_idx"] = 0
            if param == "sum_last":
                kw["include_last_offset"] = True
            p = ramp([8], 4, 1.0, 0.75, d) if param == "sum_psw" else None
            out = F.embedding_bag(idx, w, off, per_sample_weights=p, **kw)
            return out, ({"w": w, "p": p} if p is not None else {"w": w})
        return nn_unbatched(op, d, param)

    def nn_unbatched(op, d, param):
        """Mirrors `nn_unbatched` in torch_parity.rs: the 2-D ops on an unbatched image,
        conv_transpose1d, AvgPool2d's divisor_override."""
        F = torch.nn.functional
        if op == "unb2d":
            x = ramp([2, 5, 6], 7, 3.0, 0.5, d)
            if param == "conv":
                w, b = ramp([3, 2, 3, 3], 5, 2.0, 0.5, d), ramp([3], 3, 1.0, 0.5, d)
                return F.conv2d(x, w, b, 1, 1), {"x": x}
            if param == "convT":
                return F.conv_transpose2d(x, ramp([2, 3, 2, 2], 5, 2.0, 0.5, d), None, 2), {"x": x}
            if param == "unpool":
                v, i = F.max_pool2d(x, 2, 2, return_indices=True)
                return F.max_unpool2d(v, i, 2, 2), {"x": x}
            out = {"pool": lambda: F.max_pool2d(x, 3, 2, 1),
                   "avg": lambda: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
                   "adaavg": lambda: F.adaptive_avg_pool2d(x, (2, 3)),
                   "adamax": lambda: F.adaptive_max_pool2d(x, (2, 3)),
                   "lppool": lambda: F.lp_pool2d(x, 2.0, 2)}[param]()
            return out, {"x": x}
        if op == "convT1d":
            xs, ws, stride, pad, opad, groups, dil = {
                "k3s2": ([2, 4, 5], [4, 3, 3], 2, 0, 0, 1, 1),
                "p1o1": ([2, 4, 5], [4, 3, 3], 2, 1, 1, 1, 1),
                "g2d2": ([1, 4, 6], [4, 1, 2], 1, 1, 1, 2, 2),
                "unb": ([4, 5], [4, 2, 3], 1, 0, 0, 1, 1)}[param]
            x = ramp(xs, 7, 3.0, 0.25, d)
            w = ramp(ws, 5, 2.0, 0.5, d)
            b = ramp([ws[1] * groups], 3, 1.0, 0.5, d)
            return F.conv_transpose1d(x, w, b, stride, pad, opad, groups, dil), {"x": x, "w": w, "b": b}
        if op == "avgdiv":
            kernel, stride, pad, ceil, div = {"k2d3": (2, None, 0, False, 3),
                                              "k3s2p1cd5": (3, 2, 1, True, 5),
                                              "unb": (2, 1, 0, False, 2)}[param]
            x = ramp([2, 5, 6] if param == "unb" else [1, 2, 5, 6], 7, 3.0, 0.5, d)
            m = torch.nn.AvgPool2d(kernel, stride, pad, ceil_mode=ceil, divisor_override=div)
            return m(x), {"x": x}
        if op == "adamax3i":
            size = {"o111": (1, 1, 1), "o234": (2, 3, 4), "o322": (3, 2, 2), "unb": (2, 3, 4)}[param]
            # Ties on purpose: the index is the first maximum in depth, row, column order.
            x = ramp([2, 4, 5, 6] if param == "unb" else [1, 2, 4, 5, 6], 4, 0.0, 1.0, d)
            return F.adaptive_max_pool3d(x, size, return_indices=True)[1], {"x": x}
        if op == "unpool3d":
            kernel, stride, pad, size = {"k2": (2, None, 0, None), "k3s2p1": (3, 2, 1, (5, 5, 6)),
                                         "unb": (2, 1, 0, None)}[param]
            x = ramp([2, 5, 5, 6] if param == "unb" else [1, 2, 5, 5, 6], 7, 3.0, 0.5, d)
            v, i = F.max_pool3d(x, kernel, stride, pad, return_indices=True)
            return F.max_unpool3d(v, i, kernel, stride, pad, output_size=size), {"x": x}
        if op == "gsamp3":
            mode = {"b": "bilinear", "n": "nearest"}[param[0]]
            pad = {"z": "zeros", "b": "border", "r": "reflection"}[param[1]]
            x = ramp([1, 2, 3, 4, 5], 7, 3.0, 0.5, d)
            g = ramp([1, 2, 3, 2, 3], 11, 5.0, 0.27, d)
            return F.grid_sample(x, g, mode=mode, padding_mode=pad, align_corners=param.endswith("a")), \
                {"x": x, "g": g}
        if op == "affine3":
            theta = ramp([2, 3, 4], 5, 2.0, 0.4, d)
            return F.affine_grid(theta, [2, 1, 2, 3, 4], align_corners=param == "align"), {"x": theta}
        if op in ("fmp2", "fmp2i", "fmp3", "fmp3i"):
            r = 2 if op.startswith("fmp2") else 3
            kernel, size, ratio = FMP_CASES[r][param]
            shape = ([1, 2, 5, 6] if r == 2 else [1, 2, 4, 5, 6])
            if param == "unb":
                shape = shape[1:]
            # Ties on purpose: the first maximum of each window wins.
            x = ramp(shape, 4 if op.endswith("i") else 7, 0.0 if op.endswith("i") else 3.0, 1.0, d)
            u = torch.tensor(FMP_SAMPLES[: 2 * r], dtype=torch.float64).reshape(1, 2, r)
            u = u.to(x.dtype).to(dev) if x.is_floating_point() else u.to(dev)
            f = F.fractional_max_pool2d if r == 2 else F.fractional_max_pool3d
            v, i = f(x, kernel, output_size=size, output_ratio=ratio, return_indices=True, _random_samples=u)
            return (i if op.endswith("i") else v), {"x": x}
        if op == "ctc":
            t, targets, il, tl, blank, red, zinf = CTC_CASES[param]
            shape = [t, 4] if param == "unb" else [t, len(il), 4]
            x = ramp(shape, 7, 3.0, 0.5, d)
            tg = torch.tensor(targets).to(dev)
            out = F.ctc_loss(F.log_softmax(x, -1), tg, il, tl, blank, red, zinf)
            return out, {"x": x}
        if op == "lppool3":
            p, kernel, stride, ceil = {"p2k2": (2.0, 2, None, False), "p3k3s2c": (3.0, 3, 2, True),
                                       "p15k122s1": (1.5, (1, 2, 2), 1, False), "unb": (2.0, 2, None, False)}[param]
            # Negative values only where the power keeps them real.
            off = 3.0 if p == 2.0 else 0.0
            x = ramp([2, 4, 5, 6] if param == "unb" else [1, 2, 4, 5, 6], 7, off, 0.5, d)
            return F.lp_pool3d(x, p, kernel, stride, ceil), {"x": x}
        if op == "adamax1i":
            # Ties on purpose: the index is the first maximum.
            x = ramp([2, 3, 7] if param == "o3" else [3, 7], 4, 0.0, 1.0, d)
            return F.adaptive_max_pool1d(x, 3 if param == "o3" else 4, return_indices=True)[1], {"x": x}
        if op in ("upnear", "upbil"):
            x = ramp([1, 2, 5] if param == "s3d" else [1, 2, 3, 4], 7, 3.0, 0.5, d)
            kw = {"size": (5, 7)} if param == "sz" else {"scale_factor": 2.0}
            m = (torch.nn.UpsamplingNearest2d if op == "upnear" else torch.nn.UpsamplingBilinear2d)(**kw)
            return m(x), {"x": x}
        rnn = torch.nn.utils.rnn
        if op == "padseq":
            x = ramp([9, 2], 7, 3.0, 0.5, d)
            seqs = [x[0:2], x[2:6], x[6:9]]
            kw = {"r": {}, "lbf": {"batch_first": True, "padding_side": "left"},
                  "pv": {"padding_value": -2.0}}[param]
            return rnn.pad_sequence(seqs, **kw), {"x": x}
        if op == "packpad":
            if param == "unpack":
                x = ramp([9, 2], 7, 3.0, 0.5, d)
                seqs = rnn.unpack_sequence(rnn.pack_sequence([x[0:2], x[2:6], x[6:9]], enforce_sorted=False))
                return torch.cat(seqs, 0), {"x": x}
            lengths, bf = {"sorted": ([4, 3, 1], False), "unsorted": ([2, 4, 3], False),
                           "bf": ([2, 4, 3], True), "roundtrip": ([1, 4, 2], False)}[param]
            x = ramp([3, 4, 2] if bf else [4, 3, 2], 7, 3.0, 0.5, d)
            p = rnn.pack_padded_sequence(x, lengths, batch_first=bf, enforce_sorted=param == "sorted")
            if param in ("sorted", "unsorted"):
                return p.data, {"x": x}
            if param == "bf":
                return rnn.pad_packed_sequence(p, batch_first=True, padding_value=-2.0, total_length=5)[0], {"x": x}
            return rnn.pad_packed_sequence(p)[0], {"x": x}
        utils = torch.nn.utils
        if op == "fuse":
            nn = torch.nn
            if param.startswith("conv"):
                layer = (nn.ConvTranspose2d(2, 3, 2, stride=2) if param == "convT"
                         else nn.Conv2d(2, 3, 3, padding=1, bias=param != "convnb"))
                bn, shape = nn.BatchNorm2d(3, affine=param != "convnb"), [1, 2, 3, 3]
            else:
                layer, bn, shape = nn.Linear(4, 3, bias=param != "linnb"), nn.BatchNorm1d(3), [2, 4]
            layer, bn = layer.to(T[d]).to(dev), bn.to(T[d]).to(dev)
            set_ramps(layer, 0.3, d)
            set_ramps(bn, 0.4, d)
            with torch.no_grad():
                bn(layer(ramp([4] + shape[1:], 5, 1.0, 0.5, d)))  # running statistics
            layer.eval()
            bn.eval()
            if param.startswith("conv"):
                fused = utils.fuse_conv_bn_eval(layer, bn, transpose=param == "convT")
            else:
                fused = utils.fuse_linear_bn_eval(layer, bn)
            x = ramp(shape, 7, 3.0, 0.5, d)
            return fused(x), {"x": x}
        if op in ("clipn", "p2v"):
            lin = torch.nn.Linear(3, 2).to(T[d]).to(dev)
            set_ramps(lin, 0.5, d)
            x = ramp([4, 3], 7, 3.0, 0.5, d)
            if op == "p2v":
                v = utils.parameters_to_vector(lin.parameters())
                utils.vector_to_parameters(v.detach() * 0.5, lin.parameters())
                return torch.cat([v, lin(x).flatten()]), {}
            weighted_backward(lin(x))
            p = {"p1": 1.0, "pinf": math.inf, "p3": 3.0}[param]
            total = utils.clip_grad_norm_(lin.parameters(), 0.5, norm_type=p)
            return torch.cat([total.reshape(1), lin.weight.grad.flatten(), lin.bias.grad]), {}
        if op == "asm":
            m = torch.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6], div_value=2.0 if param == "hb" else 4.0,
                                                    head_bias=param == "hb").to(T[d]).to(dev)
            set_ramps(m, 0.3, d)
            x = ramp([5, 8], 7, 3.0, 0.5, d)
            t = torch.tensor([0, 4, 9, 2, 7], device=dev)
            out = {"fwd": lambda: m(x, t).output, "hb": lambda: m(x, t).output, "loss": lambda: m(x, t).loss,
                   "logp": lambda: m.log_prob(x), "pred": lambda: m.predict(x),
                   "unb": lambda: m(x[2], t[2]).output}[param]()
            return out, {"x": x}
        if op == "inact":
            x = ramp([2, 5], 7, 3.0, 0.5, d)
            y = x.detach().clone()
            out = {"relu": lambda: F.relu_(y), "elu": lambda: F.elu_(y, 0.5),
                   "leaky": lambda: F.leaky_relu_(y, 0.2), "hardtanh": lambda: F.hardtanh_(y, -1.0, 2.0),
                   "threshold": lambda: F.threshold_(y, 0.5, -3.0), "selu": lambda: F.selu_(y),
                   "celu": lambda: F.celu_(y, 1.5), "rrelu": lambda: F.rrelu_(y, 0.1, 0.3, training=False)}[param]()
            return out, {"x": x}
        raise ValueError(f"unknown nn op {op!r}")

    def result_or_grad(out, want, inputs):
        """`out` itself (want "out"), or the gradient of sum(out * w) for inputs[want]."""
        if want == "out":
            return out.detach()
        weighted_backward(out)
        g = inputs[want].grad if want in inputs else None
        if g is None:
            raise ValueError("no gradient")
        return g

    def set_ramps(m, scale, d):
        """A layer's parameters set to ramps of dtype d, in torch's parameter order; by name."""
        with torch.no_grad():
            for k, (name, p) in enumerate(m.named_parameters()):
                p.copy_(ramp(list(p.shape), 5 + k % 3, 2.0, scale, d).detach())
        return dict(m.named_parameters())

    def nn_case(w):
        F = torch.nn.functional
        op, d, param, want = w[1], w[2], w[3], w[4]
        x = ramp([2, 3], 5, 2.0, 0.75, d)
        if op in ("mse", "bce"):
            y = ramp([2, 3], 4, 1.0, 0.5, param)
            out = F.mse_loss(x, y) if op == "mse" else F.binary_cross_entropy_with_logits(x, y)
            inputs = {"x": x, "y": y}
        elif op == "ce":
            out, inputs = F.cross_entropy(x, torch.tensor([2, 0]).to(T[param]).to(dev)), {"x": x}
        elif op == "conv":
            # input, weight, stride, padding, dilation, groups
            xs, ks, stride, pad, dil, groups = {
                "s1p0": ([1, 2, 5, 5], [3, 2, 3, 3], 1, 0, 1, 1),
                "s2p1": ([1, 2, 5, 5], [3, 2, 3, 3], 2, 1, 1, 1),
                "d2p2": ([1, 2, 5, 5], [3, 2, 3, 3], 1, 2, 2, 1),
                "g2": ([1, 4, 6, 5], [4, 2, 3, 2], (2, 1), (1, 0), 1, 2),
                "same": ([1, 2, 5, 6], [3, 2, 2, 4], 1, "same", (1, 2), 1),
                "dw": ([1, 2, 5, 5], [4, 1, 3, 3], 1, 1, (2, 1), 2),
            }.get(param, ([1, 2, 5, 5], [3, 2, 3, 3], 1, 1, 1, 1))
            x = ramp(xs, 7, 3.0, 0.5, d)
            k, b = ramp(ks, 5, 2.0, 0.25, d), ramp(ks[:1], 3, 1.0, 0.5, d)
            out = F.conv2d(x, k, b, stride=stride, padding=pad, dilation=dil, groups=groups)
            inputs = {"x": x, "w": k, "b": b}
        elif op == "convT":
            # input, weight, stride, padding, output padding, groups, dilation
            xs, ks, stride, pad, opad, groups, dil = {
                "k2s2": ([1, 2, 3, 4], [2, 3, 2, 2], 2, 0, 0, 1, 1),
                "s2p1o1": ([1, 2, 3, 3], [2, 3, 3, 3], 2, 1, 1, 1, 1),
            }.get(param, ([1, 4, 3, 3], [4, 1, 3, 2], (2, 1), (1, 0), (1, 0), 2, (1, 2)))
            x = ramp(xs, 7, 3.0, 0.5, d)
            k, b = ramp(ks, 5, 2.0, 0.25, d), ramp([ks[1] * groups], 3, 1.0, 0.5, d)
            out = F.conv_transpose2d(x, k, b, stride=stride, padding=pad, output_padding=opad,
                                     groups=groups, dilation=dil)
            inputs = {"x": x, "w": k, "b": b}
        elif op == "interp":
            x = ramp([1, 2, 3, 4], 7, 3.0, 0.5, d)
            size, mode, align = {
                "n2": (2.0, "nearest", None), "n57": ((5, 7), "nearest", None),
                "n07": (0.7, "nearest", None), "ne57": ((5, 7), "nearest-exact", None),
                "ne15": ((1.5, 2.5), "nearest-exact", None), "b2": (2.0, "bilinear", False),
                "b57a": ((5, 7), "bilinear", True), "b15": ((1.5, 2.5), "bilinear", False),
            }.get(param, ((2, 3), "bilinear", False))
            if isinstance(size[0] if isinstance(size, tuple) else size, float):
                out = F.interpolate(x, scale_factor=size, mode=mode, align_corners=align)
            else:
                out = F.interpolate(x, size=size, mode=mode, align_corners=align)
            inputs = {"x": x}
        elif op == "pool":
            x = ramp([1, 2, 5, 6], 4, 0.0, 1.0, d)
            kernel, stride, pad, dil, ceil = {
                "k2s2": (2, 2, 0, 1, False), "k3s1": (3, 1, 0, 1, False),
                "k3s2p1": (3, 2, 1, 1, False), "k2s1p1": (2, 1, 1, 1, False),
                "k2s2c": (2, 2, 0, 1, True), "k3s2p1d2c": (3, 2, 1, 2, True),
                "k23s12c": ((2, 3), (1, 2), 1, (1, 2), True),
            }.get(param, (2, 1, 0, 1, False))
            out, inputs = F.max_pool2d(x, kernel, stride, pad, dil, ceil_mode=ceil), {"x": x}
        elif op == "avgpool":
            x = ramp([1, 2, 5, 6], 7, 3.0, 0.5, d)
            kernel, stride, pad, ceil, include = {
                "k2s2": (2, 2, 0, False, True), "k3s1p1": (3, 1, 1, False, True),
                "k3s2p1": (3, 2, 1, False, True), "k3s2p1x": (3, 2, 1, False, False),
                "k3s2p1c": (3, 2, 1, True, True), "k3s2p1cx": (3, 2, 1, True, False),
                "k23s21c": ((2, 3), (2, 1), 1, True, True),
            }.get(param, (2, 1, 0, False, True))
            out = F.avg_pool2d(x, kernel, stride, pad, ceil_mode=ceil, count_include_pad=include)
            inputs = {"x": x}
        elif op == "adapool":
            x = ramp([1, 2, 5, 5], 7, 3.0, 0.5, d)
            size = tuple(int(v) for v in param[1:].split("x"))
            out, inputs = F.adaptive_avg_pool2d(x, size), {"x": x}
        elif op == "emb":
            table = ramp([5, 3], 7, 3.0, 0.5, d)
            idx = torch.tensor([[1, 4, 1], [0, 3, 4]], dtype=T[param], device=dev)
            out, inputs = F.embedding(idx, table), {"w": table}
        elif op == "nll":
            out, inputs = F.nll_loss(x, torch.tensor([2, 0]).to(T[param]).to(dev)), {"x": x}
        elif op in ("l1", "smoothl1", "smoothl1_b0", "huber"):
            y = ramp([2, 3], 4, 1.0, 0.5, param)
            out = {"l1": lambda: F.l1_loss(x, y), "smoothl1": lambda: F.smooth_l1_loss(x, y, beta=1.0),
                   "smoothl1_b0": lambda: F.smooth_l1_loss(x, y, beta=0.0),
                   "huber": lambda: F.huber_loss(x, y, delta=0.75)}[op]()
            inputs = {"x": x, "y": y}
        elif op == "bcep":
            # Probabilities with both ends, 0 and 1, where the logs are clamped.
            p, y = ramp([2, 3], 5, 0.0, 0.25, d), ramp([2, 3], 4, 0.0, 1 / 3, param)
            out, inputs = F.binary_cross_entropy(p, y), {"x": p, "y": y}
        elif op.rsplit("_", 1)[-1] in ("sum", "none"):
            base, red = op.rsplit("_", 1)
            if base in ("ce", "nll"):
                t = torch.tensor([2, 0]).to(T[param]).to(dev)
                out = (F.cross_entropy if base == "ce" else F.nll_loss)(x, t, reduction=red)
                inputs = {"x": x}
            elif base == "bcep":
                p, y = ramp([2, 3], 5, 0.0, 0.25, d), ramp([2, 3], 4, 0.0, 1 / 3, param)
                out, inputs = F.binary_cross_entropy(p, y, reduction=red), {"x": p, "y": y}
            else:
                y = ramp([2, 3], 4, 1.0, 0.5, param)
                loss = {"mse": F.mse_loss, "l1": F.l1_loss, "bce": F.binary_cross_entropy_with_logits,
                        "smoothl1": lambda a, b, reduction: F.smooth_l1_loss(a, b, reduction=reduction, beta=1.0),
                        "huber": lambda a, b, reduction: F.huber_loss(a, b, reduction=reduction, delta=0.75)}[base]
                out, inputs = loss(x, y, reduction=red), {"x": x, "y": y}
        elif op in NN_MORE:
            out, inputs = nn_more(op, d, param)
        else:
            raise ValueError(f"unknown nn op {op!r}")
        return result_or_grad(out, want, inputs)

    def optim_case(w):
        opt, d, config = w[1], w[2], w[3]
        p = torch.nn.Parameter(ramp([2, 3], 5, 2.0, 0.75, d).detach())
        make = {("sgd", "plain"): lambda: torch.optim.SGD([p], lr=0.1),
                ("sgd", "mom"): lambda: torch.optim.SGD([p], lr=0.1, momentum=0.9),
                ("sgd", "momwd"): lambda: torch.optim.SGD([p], lr=0.1, momentum=0.9, weight_decay=0.01),
                ("adam", "plain"): lambda: torch.optim.Adam([p], lr=0.01),
                ("adam", "wd"): lambda: torch.optim.Adam([p], lr=0.01, weight_decay=0.01),
                ("adam", "betas"): lambda: torch.optim.Adam([p], lr=0.01, betas=(0.5, 0.9)),
                ("adamw", "plain"): lambda: torch.optim.AdamW([p], lr=0.01),
                ("adamw", "wd"): lambda: torch.optim.AdamW([p], lr=0.01, weight_decay=0.1),
                ("rmsprop", "plain"): lambda: torch.optim.RMSprop([p], lr=0.01),
                ("rmsprop", "mom"): lambda: torch.optim.RMSprop([p], lr=0.01, momentum=0.9),
                ("rmsprop", "wdalpha"): lambda: torch.optim.RMSprop([p], lr=0.01, weight_decay=0.1, alpha=0.9)}
        o = make[(opt, config)]()
        for t in range(3):
            (p * ramp([2, 3], 4, float(t), 0.5, d).detach()).sum().backward()
            o.step()
            o.zero_grad()
        return o.state[p][w[4]].detach() if len(w) > 4 else p.detach()

    def view_case(w):
        op, d, want = w[1], w[2], w[3]
        x, y = ramp([2, 3], 5, 2.0, 0.75, d), ramp([2, 3], 4, 1.0, 0.5, d)
        ints = lambda v, shape: torch.tensor(v).reshape(shape).to(dev)
        out = {
            "narrow": lambda: x.narrow(1, 1, 2),
            "select": lambda: x.select(0, -1),
            "t": lambda: x.t(),
            "permute": lambda: x.unsqueeze(0).permute(2, 0, 1),
            "expand": lambda: x.unsqueeze(0).expand(2, 2, 3),
            "flip": lambda: x.flip(1),
            "reshape": lambda: x.reshape(3, 2),
            "squeeze": lambda: x.unsqueeze(1).squeeze(1),
            "index_select": lambda: x.index_select(1, ints([2, 0, 2], [3])),
            "gather": lambda: x.gather(1, ints([0, 2, 1, 1], [2, 2])),
            "where": lambda: torch.where(x > y, x, y),
            "cat": lambda: torch.cat([x, y], 1),
            "stack": lambda: torch.stack([x, y], 0),
            "t_matmul": lambda: x.t() @ y,
            "bmm_matrix": lambda: x.reshape(2, 1, 3) @ y.t(),
            "bmm_stack": lambda: x.reshape(2, 1, 3) @ y.reshape(2, 3, 1),
            "bmm_broadcast": lambda: x.reshape(1, 2, 3) @ y.reshape(3, 2).expand(2, 3, 2),
            "bmm_vector_left": lambda: x.select(0, 0) @ y.reshape(2, 3, 1),
            "bmm_vector_right": lambda: x.reshape(2, 1, 3) @ y.select(0, 1),
            "bmm_mismatch": lambda: x.reshape(2, 1, 3) @ y.reshape(3, 2, 1),
        }[op]()
        if want == "out":
            return out.detach()
        weighted_backward(out)
        g = (y if want == "y" else x).grad
        if g is None:
            raise ValueError("no gradient")
        return g

    def out_or_grad(out, x, want):
        """Mirrors `out_or_grad` in torch_parity.rs."""
        if want == "out":
            return out.detach()
        weighted_backward(out)
        if x.grad is None:
            raise ValueError("no gradient")
        # A gradient torch knows to be zero (sgn's) is a ZeroTensor, which cannot be listed.
        return torch.zeros_like(x.grad) if x.grad._is_zerotensor() else x.grad

    def empty_case(w):
        F = torch.nn.functional
        op, d, shape, want = w[1], w[2], w[3], w[4]
        if op in EMPTY_NN:
            x = torch.zeros({"ce": [0, 3], "mse": [0], "conv": [0, 2, 5, 5], "pool": [0, 2, 4, 4]}[op],
                            dtype=T[d], device=dev).requires_grad_()
            out = {"ce": lambda: F.cross_entropy(x, torch.zeros(0, dtype=torch.int64, device=dev)),
                   "mse": lambda: F.mse_loss(x, torch.zeros(0, dtype=T[d], device=dev)),
                   "conv": lambda: F.conv2d(x, torch.ones(3, 2, 3, 3, dtype=T[d], device=dev)),
                   "pool": lambda: F.max_pool2d(x, 2, 2)}[op]()
        else:
            x = torch.zeros([int(n) for n in shape.split("x")], dtype=T[d], device=dev)
            if x.is_floating_point():
                x.requires_grad_()
            last = x.dim() - 1
            out = {
                "exp": lambda: torch.exp(x), "relu": lambda: torch.relu(x), "neg": lambda: torch.neg(x),
                "add": lambda: x + x, "mul_scalar": lambda: x * 2, "lt_scalar": lambda: x < 1,
                "sum": lambda: x.sum(), "mean": lambda: x.mean(), "max": lambda: x.max(),
                "argmax": lambda: x.argmax(), "var": lambda: x.var(), "std": lambda: x.std(),
                "sum_d0": lambda: x.sum(0), "sum_dlast": lambda: x.sum(last),
                "mean_d0": lambda: x.mean(0), "mean_dlast": lambda: x.mean(last),
                "max_d0": lambda: x.max(0).values, "max_dlast": lambda: x.max(last).values,
                "argmax_d0": lambda: x.argmax(0), "argmax_dlast": lambda: x.argmax(last),
                "var_d0": lambda: x.var(0), "var_dlast": lambda: x.var(last),
                "softmax": lambda: torch.softmax(x, last), "log_softmax_d0": lambda: torch.log_softmax(x, 0),
                "matmul": lambda: x @ x.transpose(0, last),
                "cat_d0": lambda: torch.cat([x, x], 0), "cat_dlast": lambda: torch.cat([x, x], last),
                "stack": lambda: torch.stack([x, x], 1), "narrow": lambda: x.narrow(0, 0, 0),
                "index_select": lambda: x.index_select(0, torch.zeros(0, dtype=torch.int64, device=dev)),
                "flip": lambda: x.flip(0), "transpose": lambda: x.transpose(0, last).contiguous(),
                "reshape": lambda: x.reshape(-1, 3) if x.dim() > 1 else x.reshape(-1),
                "cast": lambda: x.to(torch.float64 if d == "i64" else torch.int64),
                "where": lambda: torch.where(x > 0, x, x * 0),
                "cumsum_d0": lambda: x.cumsum(0), "cumsum_dlast": lambda: x.cumsum(last),
                "cumprod_dlast": lambda: x.cumprod(last), "prod": lambda: x.prod(),
                "prod_d0": lambda: x.prod(0), "prod_dlast": lambda: x.prod(last),
                "any": lambda: x.any(), "all": lambda: x.all(), "any_d0": lambda: x.any(0),
                "all_dlast": lambda: x.all(last), "count_nonzero": lambda: torch.count_nonzero(x),
                "amax": lambda: x.amax(), "amax_d0": lambda: x.amax(0),
                "amax_dlast": lambda: x.amax(last),
                "logsumexp_d0": lambda: torch.logsumexp(x, 0),
                "logsumexp_dlast": lambda: torch.logsumexp(x, last),
                "median": lambda: x.median(), "median_dlast": lambda: x.median(last).values,
                "roll": lambda: torch.roll(x, 1), "roll_d0": lambda: torch.roll(x, 1, 0),
                "nonzero": lambda: torch.nonzero(x), "unique": lambda: torch.unique(x),
                "unique_counts": lambda: torch.unique(x, return_counts=True)[1],
                "masked_select": lambda: x.masked_select(x > 0), "tile": lambda: x.tile((2,)),
            }[op]()
        return out_or_grad(out, x, want)

    def more_case(w):
        op, d, want = w[1], w[2], w[3]
        if op in MORE_MADE_EXTRA:
            return {"logspace": lambda: torch.logspace(-1.5, 2.25, 7, device=dev),
                    "logspace_base2": lambda: torch.logspace(-1, 1, 5, base=2, device=dev),
                    "logspace_one": lambda: torch.logspace(0, 1, 1, device=dev)}[op]()
        if op in MORE_MADE:
            return {"linspace": lambda: torch.linspace(-3, 7.25, 7, device=dev),
                    "linspace_one": lambda: torch.linspace(2, 5, 1, device=dev),
                    "linspace_none": lambda: torch.linspace(0, 1, 0, device=dev),
                    "eye": lambda: torch.eye(3, device=dev),
                    "eye_none": lambda: torch.eye(0, device=dev),
                    "tril_indices": lambda: torch.tril_indices(3, 4, 1, device=dev),
                    "triu_indices": lambda: torch.triu_indices(4, 3, -1, device=dev)}[op]()
        x = ramp([2, 3], 5, 2.0, 0.75, d)
        if op.startswith("s") and op[1:] in MORE:
            op = op[1:]
            x = mk(d, 2)
            if x.is_floating_point():
                x.requires_grad_()
        y = ramp([2, 3], 4, 1.0, 0.5, d)
        cat_flat = lambda parts: torch.cat([p.flatten() for p in parts])
        # The values, then every vector factor squared (eigh's (L, V), svd's (U, S, Vh)).
        squared_vectors = lambda fs: cat_flat([f * f if f.dim() >= 2 else f for f in fs])  # noqa: E731
        sq = lambda: torch.cat([x, y[:1]]) + torch.eye(3, device=dev) * 3  # noqa: E731
        sing = lambda: torch.cat([sq()[:2], sq()[2:] * 0])  # noqa: E731 (a zero last row)
        pieces = lambda parts: torch.cat([p.flatten() for p in parts] +  # noqa: E731
                                         [torch.tensor([p.numel() for p in parts], device=dev)])
        nonzero = lambda: mk(d, 1).masked_fill(mk(d, 1) == 0, 5)  # noqa: E731
        w1 = lambda: ramp([3, 2, 2], 5, 2.0, 0.25, d)  # noqa: E731
        b1 = lambda: ramp([3], 3, 1.0, 0.5, d)  # noqa: E731
        both = lambda p: torch.cat([p[0].double().flatten(), p[1].double().flatten()])  # noqa: E731
        pm = lambda: (y > 0.5).long() * 2 - 1  # noqa: E731
        cls = lambda: torch.tensor([2, 0], device=dev)  # noqa: E731
        ml = lambda: torch.tensor([[2, -1, 0], [1, 1, -1]], device=dev)  # noqa: E731
        F = torch.nn.functional
        out = {
            "isnan": lambda: torch.isnan(x), "isinf": lambda: torch.isinf(x),
            "isfinite": lambda: torch.isfinite(x), "square": lambda: torch.square(x),
            "reciprocal": lambda: torch.reciprocal(x), "rsqrt": lambda: torch.rsqrt(x),
            "norm": lambda: x.norm(), "leaky_relu": lambda: torch.nn.functional.leaky_relu(x, 0.1),
            "silu": lambda: torch.nn.functional.silu(x),
            "softplus": lambda: torch.nn.functional.softplus(x),
            "gelu": lambda: torch.nn.functional.gelu(x),
            "elu": lambda: torch.nn.functional.elu(x), "elu_half": lambda: torch.nn.functional.elu(x, 0.5),
            "hardtanh": lambda: torch.nn.functional.hardtanh(x),
            "hardtanh_wide": lambda: torch.nn.functional.hardtanh(x, -0.75, 1.5),
            "relu6": lambda: torch.nn.functional.relu6(x),
            "relu6_big": lambda: torch.nn.functional.relu6(x * 4 if x.is_floating_point() else x),
            "mish": lambda: torch.nn.functional.mish(x),
            "gelu_wide": lambda: torch.nn.functional.gelu(x * 4 if x.is_floating_point() else x),
            "softplus_big": lambda: torch.nn.functional.softplus(x * 30 if x.is_floating_point() else x),
            "isclose": lambda: torch.isclose(x, y, rtol=0.5, atol=0.25),
            "allclose": lambda: torch.tensor(torch.allclose(x, x * 1, rtol=0, atol=0)),
            "masked_fill": lambda: x.masked_fill(mk("bool", 1), 2.5),
            "tril": lambda: torch.tril(x), "triu": lambda: torch.triu(x, 1),
            "tril_neg": lambda: torch.tril(x, -1),
            "outer": lambda: torch.outer(x[0], y[1]), "dot": lambda: torch.dot(x[0], y[1]),
            "repeat": lambda: x.repeat(2, 1), "repeat_more": lambda: x.repeat(2, 1, 2),
            "chunk": lambda: cat_flat(x.chunk(2, 1)), "chunk_many": lambda: cat_flat(x.chunk(4, 1)),
            "split": lambda: cat_flat(x.split(2, 1)),
            "sort": lambda: torch.cat([(s := torch.sort(x, 1))[0].double().flatten(), s[1].double().flatten()]),
            "sort_desc": lambda: torch.sort(x, 1, descending=True)[0],
            "argsort": lambda: torch.argsort(x, 0),
            "topk": lambda: torch.cat([(t := torch.topk(x, 2, 1))[0].double().flatten(), t[1].double().flatten()]),
            "topk_smallest": lambda: torch.topk(x, 2, 1, largest=False)[0],
            "topk_dim0": lambda: torch.topk(x, 1, 0)[1],
            "zeros_like": lambda: torch.zeros_like(x), "ones_like": lambda: torch.ones_like(x),
            "full_like": lambda: torch.full_like(x, 2.5),
            # x's first row is (-1.5, -0.75, 0): a zero in the line; repeated, two of them.
            "cumsum": lambda: x.cumsum(1), "cumsum_d0": lambda: x.cumsum(0),
            "cumprod": lambda: x.cumprod(1), "cumprod_d0": lambda: x.cumprod(0),
            "cumprod_zeros": lambda: x.repeat(1, 2).cumprod(1),
            "prod": lambda: x.prod(), "prod_dim": lambda: x.prod(1),
            "prod_keepdim": lambda: x.prod(0, keepdim=True),
            "prod_zeros": lambda: x.repeat(1, 2).prod(1),
            "normalize": lambda: torch.nn.functional.normalize(x, dim=1),
            "normalize_d0": lambda: torch.nn.functional.normalize(x, dim=0),
            "norm_dim": lambda: x.norm(dim=1), "norm_keepdim": lambda: x.norm(dim=0, keepdim=True),
            "cosine": lambda: torch.nn.functional.cosine_similarity(x, y, dim=1),
            "cosine_pairs": lambda: torch.nn.functional.cosine_similarity(x.unsqueeze(1), y.unsqueeze(0), dim=2),
            "one_hot": lambda: torch.nn.functional.one_hot(x.to(torch.int64).abs()),
            "one_hot_n": lambda: torch.nn.functional.one_hot(x.to(torch.int64).abs(), 4),
            "any": lambda: torch.any(x), "any_dim": lambda: x.any(1),
            "all": lambda: torch.all(x), "all_dim": lambda: x.all(0),
            "count_nonzero": lambda: torch.count_nonzero(x),
            "count_nonzero_dim": lambda: torch.count_nonzero(x, 1),
            "amax": lambda: x.amax(1), "amin_all": lambda: x.amin((0, 1)),
            "amax_keep": lambda: x.amax(0, keepdim=True),
            "amax_ties": lambda: x.repeat(1, 2).amax(1),
            "logsumexp": lambda: torch.logsumexp(x, 1),
            "logsumexp_keep": lambda: torch.logsumexp(x, 0, keepdim=True),
            "var_mean": lambda: cat_flat(torch.var_mean(x, 1)),
            "std_mean": lambda: cat_flat(torch.std_mean(x, 1)),
            "median": lambda: x.median(), "median_dim": lambda: both(x.median(1)),
            "median_d0": lambda: both(x.median(0)), "kthvalue": lambda: both(x.kthvalue(2, 1)),
            "roll": lambda: torch.roll(x, 1, 1), "roll_flat": lambda: torch.roll(x, 2),
            "roll2": lambda: torch.roll(x, (1, -4), (0, 1)),
            "diag": lambda: torch.diag(x), "diag_up": lambda: torch.diag(x, 1),
            "diag_vec": lambda: torch.diag(x[0]), "diag_vec_down": lambda: torch.diag(x[1], -1),
            "trace": lambda: torch.trace(x),
            "movedim": lambda: torch.movedim(x.unsqueeze(2), 0, 2),
            "swapaxes": lambda: x.swapaxes(0, 1),
            "unflatten": lambda: x.flatten().unflatten(0, (3, 2)),
            "tile": lambda: x.tile((2,)), "tile_more": lambda: x.tile((2, 1, 1)),
            "nonzero": lambda: torch.nonzero(x),
            "masked_select": lambda: x.masked_select(mk("bool", 1)),
            "masked_select_row": lambda: x.masked_select(mk("bool", 1)[0]),
            "unique": lambda: torch.unique(x),
            "unique_counts": lambda: both(torch.unique(x, return_counts=True)),
            "bincount": lambda: x.flatten().abs().bincount(),
            "bincount_min": lambda: x.flatten().abs().bincount(minlength=8),
            "histc": lambda: torch.histc(x, 4, -2, 2), "histc_auto": lambda: torch.histc(x, 3),
            "log2": lambda: torch.log2(x), "log10": lambda: torch.log10(x),
            "exp2": lambda: torch.exp2(x), "trunc": lambda: torch.trunc(x),
            "frac": lambda: torch.frac(x),
            "lerp": lambda: torch.lerp(x, y, 0.25), "lerp_far": lambda: torch.lerp(x, y, 0.75),
            "addmm": lambda: torch.addmm(y[0, :2], x, y.t(), beta=2, alpha=3),
            "addmm_beta0": lambda: torch.addmm(y[0, :2], x, y.t(), beta=0),
            "equal": lambda: torch.tensor(torch.equal(x, x.clone())),
            "equal_not": lambda: torch.tensor(torch.equal(x, y)),
            "pad": lambda: F.pad(x, (1, 2)), "pad_value": lambda: F.pad(x, (1, 1, 1, 0), value=2.5),
            "pad_crop": lambda: F.pad(x, (-1, 1, 0, -1)),
            "pad_three": lambda: F.pad(x, (1, 1, 1, 1, 1, 1)),
            "reflect": lambda: F.pad(x.unsqueeze(0), (2, 1), mode="reflect"),
            "reflect2": lambda: F.pad(x.reshape(1, 1, 2, 3), (1, 2, 1, 0), mode="reflect"),
            "reflect_crop": lambda: F.pad(x.unsqueeze(0), (-1, 2), mode="reflect"),
            "reflect_far": lambda: F.pad(x.unsqueeze(0), (3, 0), mode="reflect"),
            "replicate": lambda: F.pad(x.unsqueeze(0), (2, 3), mode="replicate"),
            "replicate2": lambda: F.pad(x.unsqueeze(0), (1, 0, 2, 1), mode="replicate"),
            "circular": lambda: F.pad(x.unsqueeze(0), (1, 2, 1, 0), mode="circular"),
            "circular_far": lambda: F.pad(x.unsqueeze(0), (4, 0), mode="circular"),
            "pad_mode": lambda: F.pad(x, (1, 1), mode="reflect"),
            # In-place forms, on a copy: the result, or an error when it cannot be cast back.
            "exp_": lambda: x.detach().clone().exp_(), "relu_": lambda: x.detach().clone().relu_(),
            "sqrt_": lambda: x.detach().clone().sqrt_(), "round_": lambda: x.detach().clone().round_(),
            "neg_": lambda: x.detach().clone().neg_(), "abs_": lambda: x.detach().clone().abs_(),
            "sigmoid_": lambda: x.detach().clone().sigmoid_(),
            "clamp_": lambda: x.detach().clone().clamp_(-1, 1),
            "pow_": lambda: x.detach().clone().pow_(2),
            "masked_fill_": lambda: x.detach().clone().masked_fill_(mk("bool", 1), 2),
            "log2_": lambda: x.detach().clone().log2_(), "trunc_": lambda: x.detach().clone().trunc_(),
            "square_": lambda: x.detach().clone().square_(),
            "nansum": lambda: x.nansum(), "nansum_dim": lambda: x.nansum(1),
            "nanmean": lambda: x.nanmean(), "nanmean_dim": lambda: x.nanmean(0),
            "diagonal": lambda: x.diagonal(), "diagonal_below": lambda: x.t().diagonal(-1),
            "diagonal_3d": lambda: x.unsqueeze(1).diagonal(0, 0, 2),
            "new_zeros": lambda: x.new_zeros((2, 2)), "new_full": lambda: x.new_full((3,), 2.5),
            # Divisors without a zero (an integer zero is an error), and a wider dividend.
            "fmod_nz": lambda: torch.fmod(x, nonzero()), "remainder_nz": lambda: torch.remainder(x, nonzero()),
            "floor_divide_nz": lambda: torch.floor_divide(mk(d, 0), nonzero()),
            "fmod_wide": lambda: torch.fmod(mk(d, 0), nonzero()),
            "remainder_wide": lambda: torch.remainder(mk(d, 0), nonzero()),
            "fmod_": lambda: x.detach().clone().fmod_(2),
            "remainder_": lambda: x.detach().clone().remainder_(-2),
            "tan_": lambda: x.detach().clone().tan_(),
            "deg2rad": lambda: torch.deg2rad(x), "rad2deg": lambda: torch.rad2deg(x),
            "atan2_bcast": lambda: torch.atan2(x, y[1]),
            "nan_to_num": lambda: torch.nan_to_num(x),
            "nan_to_num_args": lambda: torch.nan_to_num(x, 1.5, 100.0, -100.0),
            "logical_xor": lambda: torch.logical_xor(x, y),
            "logaddexp": lambda: torch.logaddexp(x, y), "logaddexp2": lambda: torch.logaddexp2(x, y),
            "xlogy": lambda: torch.xlogy(x, y.abs()),
            "logit": lambda: torch.logit(x * 0.3 + 0.5),
            "logit_eps": lambda: torch.logit(x * 0.3 + 0.5, 0.2),
            "cdist": lambda: torch.cdist(x, y), "cdist_p1": lambda: torch.cdist(x, y, 1.0),
            "cdist_inf": lambda: torch.cdist(x, y, math.inf), "cdist_p0": lambda: torch.cdist(x, y, 0.0),
            "cdist_p3": lambda: torch.cdist(x, y, 3.0), "cdist_self": lambda: torch.cdist(x, x),
            "dist": lambda: torch.dist(x, y), "dist_p3": lambda: torch.dist(x, y, 3.0),
            "dist_inf": lambda: torch.dist(x, y, math.inf),
            "cross": lambda: torch.linalg.cross(x, y),
            "unbind": lambda: cat_flat(torch.unbind(x, 1)), "unbind_d0": lambda: cat_flat(torch.unbind(x, 0)),
            "meshgrid_ij": lambda: cat_flat(torch.meshgrid(x[0], y[1, :2], indexing="ij")),
            "meshgrid_xy": lambda: cat_flat(torch.meshgrid(x[0], y[1, :2], indexing="xy")),
            "repeat_interleave": lambda: x.repeat_interleave(2),
            "repeat_interleave_dim": lambda: x.repeat_interleave(3, dim=0),
            "repeat_interleave_counts": lambda: x.repeat_interleave(torch.tensor([1, 0, 2], device=dev), dim=1),
            "cummax": lambda: both(torch.cummax(x, 1)), "cummax_d0": lambda: both(torch.cummax(x, 0)),
            "cummin": lambda: both(torch.cummin(x, 1)),
            "searchsorted": lambda: torch.searchsorted(y.flatten().sort().values, x),
            "searchsorted_right": lambda: torch.searchsorted(y.flatten().sort().values, x, right=True),
            "searchsorted_rows": lambda: torch.searchsorted(y.sort(1).values, x),
            "bucketize": lambda: torch.bucketize(x, y.flatten().sort().values),
            "bucketize_right": lambda: torch.bucketize(x, y.flatten().sort().values, right=True),
            # Python's indexing (gpulab's `x.i(..)`).
            "index_int": lambda: x[1], "index_neg": lambda: x[:, -1], "index_step": lambda: x[:, ::2],
            "index_range": lambda: x[:, 1:], "index_none": lambda: x[None, 0],
            "index_ellipsis": lambda: x[..., 1],
            "index_tensor": lambda: x[:, torch.tensor([2, 0, 2], device=dev)],
            "index_tensor2d": lambda: x[torch.tensor([[1, 0], [1, 1]], device=dev)],
            "index_mask": lambda: x[y > 0], "index_clamp": lambda: x[:, 1:100],
            "index_step_range": lambda: x[:, 0:3:2],
            # 1-D convolution and pooling on x as [1, C=2, L=3], and im2col (unfold / fold).
            "conv1d": lambda: F.conv1d(x.unsqueeze(0), w1(), b1()),
            "conv1d_pad": lambda: F.conv1d(x.unsqueeze(0), w1(), b1(), stride=2, padding=1),
            "conv1d_same": lambda: F.conv1d(x.unsqueeze(0), w1(), None, padding="same", dilation=2),
            "conv1d_groups": lambda: F.conv1d(x.unsqueeze(0), ramp([2, 1, 2], 5, 2.0, 0.25, d), None,
                                              groups=2),
            "conv1d_unbatched": lambda: F.conv1d(x, w1()),
            "max_pool1d": lambda: F.max_pool1d(x.unsqueeze(0), 2, 1),
            "max_pool1d_pad": lambda: F.max_pool1d(x.unsqueeze(0), 2, 2, 1),
            "avg_pool1d": lambda: F.avg_pool1d(x.unsqueeze(0), 2, 1),
            "avg_pool1d_pad": lambda: F.avg_pool1d(x.unsqueeze(0), 3, 2, 1, count_include_pad=False),
            "unfold": lambda: F.unfold(x.reshape(1, 1, 2, 3), 2),
            "unfold_pad": lambda: F.unfold(x.reshape(1, 1, 2, 3), 2, padding=1, stride=2),
            "unfold_3d": lambda: F.unfold(x.reshape(1, 2, 3), (1, 2)),
            "fold": lambda: F.fold(x.reshape(1, 2, 3), (1, 4), (1, 2)),
            "fold_overlap": lambda: F.fold(x.reshape(1, 2, 3), (3, 2), (1, 2)),
            "kl_div": lambda: F.kl_div(x, y.abs()),
            "kl_div_batchmean": lambda: F.kl_div(x, y.abs(), reduction="batchmean"),
            "kl_div_sum": lambda: F.kl_div(x, y.abs(), reduction="sum"),
            "kl_div_none": lambda: F.kl_div(x, y.abs(), reduction="none"),
            "kl_div_log": lambda: F.kl_div(x, y, reduction="batchmean", log_target=True),
            "kl_div_bad": lambda: F.kl_div(x, y.abs(), reduction="foo"),
            "var_pop": lambda: x.var(1, correction=0), "var_keep": lambda: x.var(0, keepdim=True),
            "std_pop_all": lambda: x.std(correction=0),
            "std_keep_all": lambda: x.std(keepdim=True, correction=2),
            "quantile": lambda: torch.quantile(x, 0.3), "quantile_dim": lambda: torch.quantile(x, 0.75, 1),
            "quantile_keep": lambda: torch.quantile(x, 0.4, 0, keepdim=True),
            "quantile_end": lambda: torch.quantile(x, 1.0, 1),
            "nanquantile_dim": lambda: torch.nanquantile(x, 0.6, 1),
            "quantile_bad": lambda: torch.quantile(x, 1.5),
            "cov": lambda: torch.cov(x), "cov_pop": lambda: torch.cov(x, correction=0),
            "cov_vec": lambda: torch.cov(x[0]), "corrcoef": lambda: torch.corrcoef(x + y),
            "corrcoef_vec": lambda: torch.corrcoef(x[1]),
            "aminmax": lambda: torch.stack(torch.aminmax(x)),
            "aminmax_dim": lambda: torch.cat(torch.aminmax(x, dim=1)),
            "diff": lambda: torch.diff(x), "diff_d0": lambda: torch.diff(x, dim=0),
            "diff_two": lambda: torch.diff(x, n=2),
            "flatten_from": lambda: x.unsqueeze(0).flatten(1),
            "flatten_dims": lambda: x.reshape(1, 2, 3, 1).flatten(1, 2),
            "expand_as": lambda: x[0].expand_as(y), "type_as": lambda: x.type_as(y.double()),
            "take": lambda: x.take(torch.tensor([5, 0, -1, 2], device=dev)),
            "take_2d": lambda: x.take(torch.tensor([[1, 2], [3, 4]], device=dev)),
            "index_fill": lambda: x.index_fill(1, torch.tensor([0, 2], device=dev), 2),
            "index_copy": lambda: x.index_copy(0, torch.tensor([1], device=dev), y[:1]),
            "index_fill_": lambda: x.detach().clone().index_fill_(1, torch.tensor([2], device=dev), 2),
            "index_copy_": lambda: x.detach().clone().index_copy_(1, torch.tensor([2, 0], device=dev),
                                                                  y.detach()[:, :2]),
            "rot90": lambda: x.rot90(1, [0, 1]), "rot90_k2": lambda: x.rot90(2, [0, 1]),
            "rot90_neg": lambda: x.unsqueeze(0).rot90(-1, [1, 2]),
            "fliplr": lambda: x.fliplr(), "flipud": lambda: x.flipud(),
            "pairwise_distance": lambda: F.pairwise_distance(x, y),
            "pairwise_distance_p1": lambda: F.pairwise_distance(x, y, 1.0, keepdim=True),
            "pairwise_distance_inf": lambda: F.pairwise_distance(x, y, math.inf),
            "hardsigmoid": lambda: F.hardsigmoid(x),
            "hardsigmoid_wide": lambda: F.hardsigmoid(x * 4 if x.is_floating_point() else x),
            "hardswish": lambda: F.hardswish(x),
            "hardswish_wide": lambda: F.hardswish(x * 4 if x.is_floating_point() else x),
            "logsigmoid": lambda: F.logsigmoid(x), "softsign": lambda: F.softsign(x),
            "tanhshrink": lambda: F.tanhshrink(x), "softshrink": lambda: F.softshrink(x, 0.75),
            "hardshrink": lambda: F.hardshrink(x, 0.75), "glu": lambda: F.glu(x.repeat(1, 2)),
            "glu_d0": lambda: F.glu(x, 0), "celu": lambda: F.celu(x),
            "celu_half": lambda: F.celu(x, 0.5), "selu_act": lambda: F.selu(x),
            "softmin": lambda: F.softmin(x, 1),
            "prelu": lambda: F.prelu(x, ramp([3], 3, 1.0, 0.25, d)),
            "prelu_one": lambda: F.prelu(x, ramp([1], 3, 1.0, 0.25, d)),
            "instance_norm": lambda: F.instance_norm(x.unsqueeze(0)),
            "instance_norm_affine": lambda: F.instance_norm(x.unsqueeze(0), weight=ramp([2], 3, 1.0, 0.5, d),
                                                            bias=ramp([2], 4, 2.0, 0.25, d)),
            # torch's named products, the scaled sums, and the pointwise functions composed
            # from the primitive ops.
            "mm": lambda: torch.mm(x, y.t()), "bmm": lambda: torch.bmm(x.unsqueeze(0), y.t().unsqueeze(0)),
            "mv": lambda: torch.mv(x, y[1]), "inner": lambda: torch.inner(x, y),
            "inner_vec": lambda: torch.inner(x[0], y[1]), "vdot": lambda: torch.vdot(x[0], y[1]),
            "kron": lambda: torch.kron(x, y[:, :2]), "kron_vec": lambda: torch.kron(x[0], y),
            "addmv": lambda: torch.addmv(y[0, :2], x, y[1], beta=2, alpha=3),
            "addr": lambda: torch.addr(x, y[:, 0], y[1], beta=2, alpha=3),
            "baddbmm": lambda: torch.baddbmm(y[0, :2], x.unsqueeze(0), y.t().unsqueeze(0), beta=2, alpha=3),
            "addbmm": lambda: torch.addbmm(y[0, :1], x.reshape(2, 1, 3), y.reshape(2, 3, 1), beta=2, alpha=3),
            "addmm_half": lambda: torch.addmm(y[0, :2], x, y.t(), beta=0.5, alpha=1.5),
            "addcmul": lambda: torch.addcmul(x, x, y, value=2),
            "addcmul_half": lambda: torch.addcmul(y, x, y, value=0.5),
            "addcdiv": lambda: torch.addcdiv(y, x, nonzero(), value=0.5),
            "addcdiv_int": lambda: torch.addcdiv(x, y, nonzero(), value=2),
            "fmax": lambda: torch.fmax(x, y), "fmin": lambda: torch.fmin(x, y),
            "hypot": lambda: torch.hypot(x, y),
            "copysign": lambda: torch.copysign(x, y), "copysign_zero": lambda: torch.copysign(x, y * -0.0),
            "heaviside": lambda: torch.heaviside(x, y), "signbit": lambda: torch.signbit(x),
            "isposinf": lambda: torch.isposinf(x), "isneginf": lambda: torch.isneginf(x),
            "sinc": lambda: torch.sinc(x), "float_power": lambda: torch.float_power(x, 2),
            "float_power_t": lambda: torch.float_power(x, y), "sgn": lambda: torch.sgn(x),
            "clip": lambda: torch.clip(x, -1, 1), "arccos": lambda: torch.arccos(x),
            "arctan2": lambda: torch.arctan2(x, y), "true_divide": lambda: torch.true_divide(x, nonzero()),
            # Joins and splits by layout; a list of pieces as its values, then each piece's size.
            "atleast_2d": lambda: torch.atleast_2d(x[0, 0]), "atleast_3d": lambda: torch.atleast_3d(x[0]),
            "atleast_3d_mat": lambda: torch.atleast_3d(x),
            "hstack": lambda: torch.hstack([x, y]), "hstack_vec": lambda: torch.hstack([x[0], y[1]]),
            "vstack": lambda: torch.vstack([x, y[0]]), "dstack": lambda: torch.dstack([x, y]),
            "column_stack": lambda: torch.column_stack([x[0], y.t()]),
            "tensor_split": lambda: pieces(torch.tensor_split(x, 2, 1)),
            "tensor_split_many": lambda: pieces(torch.tensor_split(x, 4, 1)),
            "tensor_split_at": lambda: pieces(torch.tensor_split(x, [1, 5, -2], 1)),
            "hsplit": lambda: pieces(torch.hsplit(x, 3)), "hsplit_bad": lambda: pieces(torch.hsplit(x, 2)),
            "vsplit": lambda: pieces(torch.vsplit(x, 2)), "dsplit": lambda: pieces(torch.dsplit(x.reshape(1, 2, 3), 3)),
            "block_diag": lambda: torch.block_diag(x, y[0], y[1, 0]),
            "cartesian_prod": lambda: torch.cartesian_prod(x[0], y[1, :2]),
            "take_along_dim": lambda: torch.take_along_dim(x, torch.sort(x, dim=1, stable=True)[1], 1),
            "take_along_dim_flat": lambda: torch.take_along_dim(x, torch.tensor([5, 0, 2], device=dev)),
            "take_along_dim_bcast": lambda: torch.take_along_dim(x, torch.tensor([[1], [0], [1]], device=dev), 0),
            "ravel": lambda: x.t().ravel(), "msort": lambda: torch.msort(x),
            "moveaxis": lambda: torch.moveaxis(x.unsqueeze(2), 0, 2),
            # torch.linalg on a regular 3 x 3 matrix holding x (a float32 one for the integer
            # dtypes, as `x + eye` promotes), and on x's own square part in its dtype.
            "det": lambda: torch.linalg.det(sq()), "det_2": lambda: torch.linalg.det(x[:, :2]),
            "det_batch": lambda: torch.linalg.det(torch.stack([sq(), sq().t() * 2])),
            "slogdet": lambda: torch.stack(torch.linalg.slogdet(sq() - torch.eye(3, device=dev) * 5)),
            "inv": lambda: torch.linalg.inv(sq()), "inv_2": lambda: torch.linalg.inv(x[:, :2]),
            "inv_singular": lambda: torch.linalg.inv(x[:, :2] * 0),
            "solve": lambda: torch.linalg.solve(sq(), y.t()), "solve_vec": lambda: torch.linalg.solve(sq(), y[1]),
            "solve_batch": lambda: torch.linalg.solve(torch.stack([sq(), sq().t()]), y.t()),
            "solve_bad": lambda: torch.linalg.solve(sq(), y),
            # The gamma family and torch.special; zeta's x has no gradient (an error, as asked).
            "lgamma": lambda: torch.lgamma(x), "digamma": lambda: torch.digamma(x),
            "polygamma1": lambda: torch.polygamma(1, x), "polygamma2": lambda: torch.polygamma(2, x),
            "polygamma3": lambda: torch.polygamma(3, x), "mvlgamma": lambda: torch.mvlgamma(x, 2),
            "mvlgamma_3": lambda: torch.mvlgamma(x * x + 1, 3),
            "erfc": lambda: torch.erfc(x), "erfinv": lambda: torch.erfinv(x * 0.5),
            "zeta": lambda: torch.special.zeta(x * x + 1.5, y * y + 0.25),
            "zeta_q": lambda: torch.special.zeta(y * y + 2, x),
            "zeta_number": lambda: torch.special.zeta(2.5, x * x + 0.5),
            "zeta_other": lambda: torch.special.zeta(x * x + 1.25, 2),
            "ndtr": lambda: torch.special.ndtr(x * 3), "entr": lambda: torch.special.entr(x),
            "xlog1py": lambda: torch.special.xlog1py(x, y),
            "lgamma_": lambda: x.detach().clone().lgamma_(),
            "erfinv_": lambda: x.detach().clone().erfinv_(),
            "polygamma_": lambda: x.detach().clone().polygamma_(2),
            # linalg's norms, powers and Cholesky factor (of sq() sq()^T, positive-definite).
            "vector_norm3": lambda: torch.linalg.vector_norm(x, 3),
            "vector_norm_dim": lambda: torch.linalg.vector_norm(x, 2, dim=(0,), keepdim=True),
            "vector_norm_inf": lambda: torch.linalg.vector_norm(x, math.inf, dim=1),
            "vector_norm_ninf": lambda: torch.linalg.vector_norm(x, -math.inf, dim=1),
            "vector_norm0": lambda: torch.linalg.vector_norm(x, 0, dim=(0, 1)),
            "vector_norm_neg": lambda: torch.linalg.vector_norm(x, -1.5, dim=0),
            "vector_norm_half": lambda: torch.linalg.vector_norm(x, 0.5),
            "matrix_norm_fro": lambda: torch.linalg.matrix_norm(x),
            "matrix_norm1": lambda: torch.linalg.matrix_norm(x, 1),
            "matrix_norm_ninf": lambda: torch.linalg.matrix_norm(x, -math.inf),
            "matrix_norm_inf": lambda: torch.linalg.matrix_norm(x, math.inf, keepdim=True),
            "matrix_power0": lambda: torch.linalg.matrix_power(sq(), 0),
            "matrix_power1": lambda: torch.linalg.matrix_power(sq(), 1),
            "matrix_power3": lambda: torch.linalg.matrix_power(sq(), 3),
            "matrix_power5": lambda: torch.linalg.matrix_power(sq(), 5),
            "matrix_power_neg": lambda: torch.linalg.matrix_power(sq(), -2),
            "cholesky": lambda: torch.linalg.cholesky(sq() @ sq().mT),
            "cholesky_upper": lambda: torch.linalg.cholesky(sq() @ sq().mT, upper=True),
            "cholesky_bad": lambda: torch.linalg.cholesky(sq() - torch.eye(3, device=dev) * 5),
            # Factorisations. Eigen- and singular vectors enter squared: a vector's sign is
            # LAPACK's choice, not A's, and its square does not see it.
            "qr": lambda: cat_flat(torch.linalg.qr(x)), "qr_tall": lambda: cat_flat(torch.linalg.qr(x.mT)),
            "qr_sq": lambda: cat_flat(torch.linalg.qr(sq())),
            "qr_complete": lambda: cat_flat(torch.linalg.qr(x.mT, mode="complete")),
            "qr_r": lambda: torch.linalg.qr(x.mT, mode="r")[1],
            "eigh": lambda: squared_vectors(torch.linalg.eigh(sq() + sq().mT)),
            "eigh_upper": lambda: squared_vectors(torch.linalg.eigh(sq(), UPLO="U")),
            "eigvalsh": lambda: torch.linalg.eigvalsh(sq() + sq().mT),
            "svd": lambda: squared_vectors(torch.linalg.svd(x, full_matrices=False)),
            "svd_full": lambda: squared_vectors(torch.linalg.svd(x.mT)),
            "svd_sq": lambda: squared_vectors(torch.linalg.svd(sq())),
            "svdvals": lambda: torch.linalg.svdvals(x),
            "matrix_norm2": lambda: torch.linalg.matrix_norm(x, 2),
            "matrix_norm_n2": lambda: torch.linalg.matrix_norm(x, -2),
            "matrix_norm_nuc": lambda: torch.linalg.matrix_norm(x, "nuc", keepdim=True),
            "matrix_rank": lambda: torch.linalg.matrix_rank(sq()),
            "matrix_rank_low": lambda: torch.linalg.matrix_rank(torch.outer(x[0], y[1])),
            "matrix_rank_rtol": lambda: torch.linalg.matrix_rank(sq(), rtol=0.5),
            "pinv": lambda: torch.linalg.pinv(x), "pinv_sq": lambda: torch.linalg.pinv(sq()),
            "pinv_rank1": lambda: torch.linalg.pinv(torch.outer(x[0], y[1])),
            "cond": lambda: torch.linalg.cond(sq()), "cond_fro": lambda: torch.linalg.cond(sq(), "fro"),
            "cond_tall": lambda: torch.linalg.cond(x.mT),
            "solve_triangular": lambda: torch.linalg.solve_triangular(sq(), y.mT, upper=True),
            "solve_triangular_right": lambda: torch.linalg.solve_triangular(sq(), y, upper=False, left=False),
            "solve_triangular_unit": lambda: torch.linalg.solve_triangular(sq(), y.mT, upper=False,
                                                                           unitriangular=True),
            "lstsq": lambda: torch.linalg.lstsq(x.mT, y.mT).solution,
            "lstsq_res": lambda: torch.linalg.lstsq(x.mT, y.mT).residuals,
            "lstsq_gelsd": lambda: cat_flat(torch.linalg.lstsq(x.mT, y.mT, driver="gelsd")[:2]),
            "lstsq_rank": lambda: torch.linalg.lstsq(x.mT, y.mT).rank,
            "lstsq_vec": lambda: torch.linalg.lstsq(x.mT, y[0]).solution,
            "multi_dot": lambda: torch.linalg.multi_dot([x, y.mT, x]),
            "multi_dot_vec": lambda: torch.linalg.multi_dot([x[0], y.mT, x, y[1]]),
            "vecdot": lambda: torch.linalg.vecdot(x, y), "vecdot_d0": lambda: torch.linalg.vecdot(x, y, dim=0),
            "vander": lambda: torch.linalg.vander(x[0]), "vander_n": lambda: torch.linalg.vander(x, N=4),
            "lu_factor": lambda: torch.linalg.lu_factor(sq())[0], "lu_pivots": lambda: torch.linalg.lu_factor(sq())[1],
            "lu": lambda: cat_flat(torch.linalg.lu(sq())), "lu_tall": lambda: cat_flat(torch.linalg.lu(x.mT)),
            "lu_wide": lambda: cat_flat(torch.linalg.lu(x)),
            "lu_solve": lambda: torch.linalg.lu_solve(*torch.linalg.lu_factor(sq()), y.mT),
            "lu_solve_adj": lambda: torch.linalg.lu_solve(*torch.linalg.lu_factor(sq()), y.mT, adjoint=True),
            "lu_solve_right": lambda: torch.linalg.lu_solve(*torch.linalg.lu_factor(sq()), y, left=False),
            "matrix_exp": lambda: torch.linalg.matrix_exp(sq() * 0.5), "matrix_exp_big": lambda: torch.linalg.matrix_exp(sq()),
            "matrix_exp_batch": lambda: torch.linalg.matrix_exp(torch.stack([sq() * 0.1, sq() * -0.3])),
            "lnorm": lambda: torch.linalg.norm(x), "lnorm_ord": lambda: torch.linalg.norm(x[0], 3),
            "lnorm_dim": lambda: torch.linalg.norm(x, dim=(1,)), "lnorm_mat": lambda: torch.linalg.norm(x, "nuc"),
            "lnorm_mat_dims": lambda: torch.linalg.norm(x.reshape(2, 1, 3), math.inf, dim=(2, 0), keepdim=True),
            "logdet": lambda: torch.logdet(sq()), "logdet_neg": lambda: torch.logdet(sq() - torch.eye(3, device=dev) * 5),
            "cholesky_solve": lambda: torch.cholesky_solve(x.mT, torch.linalg.cholesky(sq() @ sq().mT)),
            "cholesky_solve_upper": lambda: torch.cholesky_solve(x.mT, torch.linalg.cholesky(sq() @ sq().mT, upper=True),
                                                                 upper=True),
            "cholesky_inverse": lambda: torch.cholesky_inverse(torch.linalg.cholesky(sq() @ sq().mT)),
            "cholesky_inverse_upper": lambda: torch.cholesky_inverse(torch.linalg.cholesky(sq() @ sq().mT, upper=True),
                                                                     upper=True),
            "pinverse": lambda: torch.pinverse(x),
            "inv_ex": lambda: cat_flat(torch.linalg.inv_ex(sq())),
            "inv_ex_singular": lambda: torch.linalg.inv_ex(torch.stack([sing(), sq()])).info,
            "solve_ex": lambda: cat_flat(torch.linalg.solve_ex(sq(), y.mT)),
            "cholesky_ex": lambda: cat_flat(torch.linalg.cholesky_ex(sq() @ sq().mT)),
            "cholesky_ex_bad": lambda: torch.linalg.cholesky_ex(torch.stack([
                sq() @ sq().mT, -(sq() @ sq().mT), torch.diag(torch.tensor([1.0, -1.0, 1.0], dtype=sq().dtype))])).info,
            "lu_factor_ex": lambda: cat_flat(torch.linalg.lu_factor_ex(sq())),
            "lu_factor_ex_singular": lambda: cat_flat(torch.linalg.lu_factor_ex(torch.stack([sing(), sq()]))),
            "lu_factor_singular": lambda: torch.linalg.lu_factor(sing())[0],
            "tensordot": lambda: torch.tensordot(x, y.mT, 1), "tensordot_dims": lambda: torch.tensordot(x, y, ([0], [0])),
            "tensordot_0": lambda: torch.tensordot(x[0], y[0], 0),
            "tensordot_bcast": lambda: torch.tensordot(x[:, :1], y, ([1], [0])),
            "tensorinv": lambda: torch.linalg.tensorinv(torch.kron(sq(), sq()).reshape(3, 3, 3, 3)),
            "tensorsolve": lambda: torch.linalg.tensorsolve(torch.kron(sq(), sq()).reshape(3, 3, 3, 3), sq()),
            "tensorsolve_dims": lambda: torch.linalg.tensorsolve(torch.kron(sq(), sq() * 0.5).reshape(3, 3, 3, 3), sq(),
                                                                 dims=(0,)),
            "householder_product": lambda: torch.linalg.householder_product(x.mT, y[0, :2]),
            "householder_batch": lambda: torch.linalg.householder_product(torch.stack([x.mT, y.mT]),
                                                                          torch.stack([x[1, :1], y[1, :1]])),
            "geqrf": lambda: cat_flat(torch.geqrf(sq())), "geqrf_tall": lambda: cat_flat(torch.geqrf(x.mT)),
            "orgqr": lambda: torch.orgqr(*torch.geqrf(x.mT.detach())) + x.mT,
            # The margin, embedding and likelihood losses: pm are targets of 1 or -1 (int64),
            # cls class indices, ml label lists ended by -1 (one listed twice).
            "margin_ranking": lambda: F.margin_ranking_loss(x, y, pm(), 0.5),
            "margin_ranking_none": lambda: F.margin_ranking_loss(x, y, pm(), 0.5, reduction="none"),
            "hinge_embedding": lambda: F.hinge_embedding_loss(x, pm(), 1.5),
            "hinge_embedding_sum": lambda: F.hinge_embedding_loss(x, pm(), reduction="sum"),
            "soft_margin": lambda: F.soft_margin_loss(x, pm()),
            "soft_margin_none": lambda: F.soft_margin_loss(x, pm(), reduction="none"),
            "cosine_embedding": lambda: F.cosine_embedding_loss(x, y, pm()[:, 0], 0.25),
            "cosine_embedding_vec": lambda: F.cosine_embedding_loss(x[0], y[0], pm()[0, 0]),
            "cosine_embedding_none": lambda: F.cosine_embedding_loss(x, y, pm()[:, 1], reduction="none"),
            "triplet": lambda: F.triplet_margin_loss(x, y, y.flip(0)),
            "triplet_swap_p1": lambda: F.triplet_margin_loss(x, y, y.flip(0), margin=0.5, p=1, swap=True),
            "triplet_none": lambda: F.triplet_margin_loss(x, y.flip(1), y, reduction="none"),
            "triplet_bad": lambda: F.triplet_margin_loss(x, y, y, margin=0.0),
            "multi_margin": lambda: F.multi_margin_loss(x, cls()),
            "multi_margin_p2_w": lambda: F.multi_margin_loss(x, cls(), p=2, margin=0.5, weight=b1().detach()),
            "multi_margin_vec": lambda: F.multi_margin_loss(x[1], cls()[:1]),
            "multi_margin_none": lambda: F.multi_margin_loss(x, cls(), reduction="none"),
            "multi_margin_bad": lambda: F.multi_margin_loss(x, cls() + 1),
            "multilabel_margin": lambda: F.multilabel_margin_loss(x, ml()),
            "multilabel_margin_none": lambda: F.multilabel_margin_loss(x, ml(), reduction="none"),
            "multilabel_margin_vec": lambda: F.multilabel_margin_loss(x[1], ml()[1]),
            "multilabel_soft": lambda: F.multilabel_soft_margin_loss(x, (y > 0.5).long()),
            "multilabel_soft_w": lambda: F.multilabel_soft_margin_loss(x, (y > 0.5).long(), weight=b1().detach()),
            "multilabel_soft_none": lambda: F.multilabel_soft_margin_loss(x, (y > 0.5).long(), reduction="none"),
            "poisson_nll": lambda: F.poisson_nll_loss(x, y.abs()),
            "poisson_nll_rate_full": lambda: F.poisson_nll_loss(x.abs(), y.abs() * 3, log_input=False, full=True),
            "poisson_nll_none": lambda: F.poisson_nll_loss(x, y.abs(), reduction="none"),
            "gaussian_nll": lambda: F.gaussian_nll_loss(x, y, y.abs() + 0.25),
            "gaussian_nll_eps": lambda: F.gaussian_nll_loss(x, y, y.abs(), eps=0.5),
            "gaussian_nll_var": lambda: F.gaussian_nll_loss(y, y.flip(0), x + 1.5, eps=0.5),
            "gaussian_nll_row": lambda: F.gaussian_nll_loss(x, y, y.abs()[:, 0] + 0.5, full=True),
            "gaussian_nll_bad": lambda: F.gaussian_nll_loss(x, y, y),
            "gaussian_nll_none": lambda: F.gaussian_nll_loss(x, y, y.abs() + 0.25, reduction="none"),
            "lcross": lambda: torch.linalg.cross(x, y), "lcross_rank": lambda: torch.linalg.cross(x[0], y),
            "ldiagonal": lambda: torch.linalg.diagonal(x), "ldiagonal_off": lambda: torch.linalg.diagonal(x, offset=1),
            "logcumsumexp": lambda: torch.logcumsumexp(x, 1),
            "logcumsumexp_wide": lambda: torch.logcumsumexp(x * 300, 1),
            "logcumsumexp_d0": lambda: torch.logcumsumexp(x, 0),
        }[op]()
        return out_or_grad(out, x, want)

    def norm_case(w):
        op, d, want = w[1], w[2], w[3]
        nn = torch.nn
        if op in NORM_OPTIONS:
            shape, m = {
                "bn1dna_train": ([4, 3], lambda: nn.BatchNorm1d(3, affine=False)),
                "bn2dnt_eval": ([2, 3, 2, 2], lambda: nn.BatchNorm2d(3, track_running_stats=False)),
                "bn1dcum_eval": ([2, 3, 4], lambda: nn.BatchNorm1d(3, momentum=None)),
                "in2dtr_train": ([2, 3, 2, 3], lambda: nn.InstanceNorm2d(3, affine=True, track_running_stats=True)),
                "in1dtr_eval": ([2, 3, 4], lambda: nn.InstanceNorm1d(3, track_running_stats=True)),
                "in2dunb": ([3, 2, 3], lambda: nn.InstanceNorm2d(3, affine=True)),
                "in1dmn_train": ([2, 3, 4], lambda: nn.InstanceNorm1d(3, momentum=None, track_running_stats=True)),
            }[op]
            m = m()
        elif op.startswith("bn"):
            shape = {"bn2d": [2, 3, 2, 2], "bn1d": [4, 3], "bn1d3": [2, 3, 4]}[op.split("_")[0]]
            m = nn.BatchNorm2d(3) if op.startswith("bn2d") else nn.BatchNorm1d(3)
        elif op.startswith("gn"):
            # groups, channels, input
            g, c, shape = {"gn": (2, 4, [2, 4, 2, 3]), "gn1": (1, 3, [2, 3, 2, 2]),
                           "gn3d": (3, 6, [2, 6, 5])}[op]
            m = nn.GroupNorm(g, c)
        else:
            shape, ns = ([2, 3], [3]) if op == "ln" else ([2, 3, 2, 2], [2, 2])
            m = nn.LayerNorm(ns)
        m = m.to(T[d]).to(dev)
        if m.weight is not None:
            with torch.no_grad():
                m.weight.copy_(ramp(list(m.weight.shape), 3, 1.0, 0.5, d).detach())
                m.bias.copy_(ramp(list(m.bias.shape), 4, 2.0, 0.25, d).detach())
        x = ramp(shape, 5, 2.0, 0.75, d)
        if "cum" in op:
            m(ramp(shape, 3, 0.5, 1.5, d))  # a first step, so the average is over two
        if op.endswith("_eval"):
            m(x)  # one training step moves the running statistics
            m.eval()
            x = ramp(shape, 4, 1.0, 0.5, d)
        out = m(x)
        if want in ("rm", "rv"):
            return (m.running_mean if want == "rm" else m.running_var).detach()
        if want == "out":
            return out.detach()
        weighted_backward(out)
        g = {"x": lambda: x.grad, "w": lambda: m.weight.grad, "b": lambda: m.bias.grad}[want]()
        if g is None:
            raise ValueError("no gradient")
        return g

    def prune_case(w):
        """nn.utils.prune (PRUNES): mirrors `prune_case` in torch_parity.rs."""
        op, d, want = w[1], w[2], w[3]
        import torch.nn.utils.prune as P
        if op.startswith("global"):
            m = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Linear(3, 2)).to(T[d]).to(dev)
            with torch.no_grad():
                at = 0
                for k, (_, p) in enumerate(m.named_parameters()):
                    steps = ((torch.arange(p.numel(), dtype=torch.float64) + at) * 0.013).reshape(p.shape)
                    p.copy_(ramp(list(p.shape), 5 + k % 3, 2.0, 0.25, d).detach() + steps.to(T[d]).to(dev))
                    at += p.numel()
            targets = [(m[0], "weight"), (m[1], "weight")]
            if op == "global_pre":
                P.l1_unstructured(m[1], "weight", 0.5)
            for amount in {"global": [0.4], "global_twice": [0.3, 0.3], "global_pre": [0.25]}[op]:
                P.global_unstructured(targets, pruning_method=P.L1Unstructured, amount=amount)
            x = ramp([2, 4], 5, 2.0, 0.75, d)
            out = m(x)
            if want in ("m0", "m1"):
                return m[int(want[1])].weight_mask
            if want == "out":
                return out.detach()
            weighted_backward(out)
            return x.grad
        m = (torch.nn.Conv2d(2, 3, 2) if op == "conv" else torch.nn.Linear(4, 3)).to(T[d]).to(dev)
        set_ramps(m, 0.25, d)
        with torch.no_grad():
            for p in m.parameters():
                p.add_((torch.arange(p.numel(), dtype=torch.float64) * 0.01).reshape(p.shape).to(p.dtype).to(dev))
        steps = {
            "l1_03": [lambda: P.l1_unstructured(m, "weight", 0.3)],
            "l1_5": [lambda: P.l1_unstructured(m, "weight", 5)],
            "l1_twice": [lambda: P.l1_unstructured(m, "weight", 0.25), lambda: P.l1_unstructured(m, "weight", 0.5)],
            "ln2_d0": [lambda: P.ln_structured(m, "weight", 1, 2, 0)],
            "ln1_last": [lambda: P.ln_structured(m, "weight", 0.5, 1, -1)],
            "lninf_d0": [lambda: P.ln_structured(m, "weight", 1, float("inf"), 0)],
            "ln_l1": [lambda: P.ln_structured(m, "weight", 1, 2, 0), lambda: P.l1_unstructured(m, "weight", 0.5)],
            "l1_ln": [lambda: P.l1_unstructured(m, "weight", 0.3), lambda: P.ln_structured(m, "weight", 1, 2, 1)],
            "custom": [lambda: P.custom_from_mask(m, "weight", (torch.arange(12) % 3 != 0).reshape(3, 4).to(dev)),
                       lambda: P.l1_unstructured(m, "weight", 0.25)],
            "conv": [lambda: P.ln_structured(m, "weight", 0.34, 2, 0)],
            "bias": [lambda: P.l1_unstructured(m, "bias", 2)],
            "ident": [lambda: P.identity(m, "weight")],
        }[op]
        for step in steps:
            step()
        params = [p for _, p in m.named_parameters()]
        x = ramp([1, 2, 4, 4] if op == "conv" else [2, 4], 5, 2.0, 0.75, d)
        out = m(x)
        if want == "out":
            return out.detach()
        if want == "b0":
            return [b for _, b in m.named_buffers()][0]
        weighted_backward(out)
        g = x.grad if want == "x" else params[int(want[1:])].grad
        if g is None:
            raise ValueError("no gradient")
        return g

    def func_case(w):
        """torch.func (FUNCS): mirrors `func_case` in torch_parity.rs."""
        op, d, want = w[1], w[2], w[3]
        fn = torch.func
        x = ramp([2, 3], 5, 2.0, 0.75, d).detach()
        if op == "grad_sin":
            return fn.grad(lambda t: (t.sin() * t).sum())(x)
        if op == "grad_value":
            g, y = fn.grad_and_value(lambda t: (t.sin() * t).sum())(x)
            return g if want == "out" else y
        if op == "vjp_twice":
            y, pullback = fn.vjp(lambda t: t.tanh() * t, x)
            if want == "out":
                return y
            v = ramp([2, 3], 3, 1.0, 0.5, d).detach() if want == "v1" else ramp([2, 3], 4, 2.0, 0.25, d).detach()
            return pullback(v)[0]
        if op == "jacrev_tanh":
            return fn.jacrev(lambda t: t.tanh() * t.sum())(x)
        if op == "vmap_rows":
            return fn.vmap(lambda r: r.softmax(0) * r.sum())(x)
        if op == "vmap_cols":
            return fn.vmap(lambda c: c.cumsum(0), in_dims=1, out_dims=1)(x)
        return fn.vmap(fn.grad(lambda r: (r.sin() ** 2).sum()))(x)

    def jac_case(w):
        """torch.autograd.functional (JACS): mirrors `jac_case` in torch_parity.rs."""
        op, d, want = w[1], w[2], w[3]
        AF = torch.autograd.functional
        x = ramp([2, 3], 5, 2.0, 0.75, d).detach()
        wc = ramp([3, 2], 4, 1.0, 0.5, d).detach()
        if op == "sin_sum":
            return AF.jacobian(lambda t: t.sin() * t.sum(), x)
        if op == "mm":
            return AF.jacobian(lambda t: t @ wc, x)
        if op == "const":
            return AF.jacobian(lambda t: wc.sum() * 2, x)
        if op == "vjp_tanh":
            y, g = AF.vjp(lambda t: t.tanh() * 2, x, ramp([2, 3], 3, 1.0, 0.5, d).detach())
            return g if want == "out" else y
        return AF.vjp(lambda t: (t * t).sum(), x)[1]

    def agrad_case(w):
        """torch.autograd.grad (AGRADS): mirrors `agrad_case` in torch_parity.rs."""
        op, d, want = w[1], w[2], w[3]
        x, wt = ramp([2, 3], 5, 2.0, 0.75, d), ramp([2, 3], 4, 1.0, 0.5, d)
        z = ramp([3], 3, 1.0, 0.5, d)
        if op == "retain":  # backward, with an activation's gradient kept by retain_grad
            h = x.exp()
            h.retain_grad()
            (h * h.sin()).sum().backward()
            return {"h": h, "x": x}[want].grad
        if op == "chain":
            ins = {"x": x, "w": wt}
            gs = torch.autograd.grad((x * wt).tanh().sum(), [x, wt])
        elif op == "mid":
            h = x.exp()
            ins = {"h": h}
            gs = torch.autograd.grad((h * h.sin()).sum(), [h])
        elif op == "seed":
            ins = {"w": wt}
            gs = torch.autograd.grad(x @ wt.T, [wt], grad_outputs=ramp([2, 2], 3, 1.0, 0.5, d).detach())
        else:
            ins = {"w": wt, "z": z}
            gs = torch.autograd.grad((x * wt).sum(), [wt, z], allow_unused=op == "unused")
        g = x.grad if want == "xgrad" else gs[list(ins).index(want)]
        if g is None:
            raise ValueError("no gradient")
        return g

    def fcall_case(w):
        """torch.func.functional_call (FCALLS): mirrors `fcall_case` in torch_parity.rs."""
        op, d, want = w[1], w[2], w[3]
        nn = torch.nn
        if op == "seq_bn":
            m = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4)).to(T[d]).to(dev)
            names = ["0.weight", "1.running_mean", "1.running_var"]
        else:
            m = nn.Linear(3, 4).to(T[d]).to(dev)
            names = ["weight", "bias"] if op == "lin" else ["weight"]
        own = list(set_ramps(m, 0.25, d).values())
        m.eval()
        tensors = dict(m.named_parameters())
        tensors.update(m.named_buffers())
        given = {n: ramp(list(tensors[n].shape), 4 + k % 3, 1.0, 0.5, d) for k, n in enumerate(names)}
        if op == "seq_bn":  # buffers, without gradient; a variance is positive
            given["1.running_mean"] = given["1.running_mean"].detach()
            given["1.running_var"] = given["1.running_var"].detach().abs() + 0.5
        x = ramp([2, 3], 5, 2.0, 0.75, d)
        out = torch.func.functional_call(m, given, (x,))
        if want == "out":
            return out.detach()
        weighted_backward(out)
        g = {"x": lambda: x.grad, "own": lambda: own[0].grad, "ownb": lambda: own[1].grad}.get(
            want, lambda: given[names[int(want[1:])]].grad)()
        if g is None:
            raise ValueError("no gradient")
        return g

    def param_case(w):
        """A layer under weight_norm / spectral_norm (PARAMS): mirrors `param_case` in
        torch_parity.rs."""
        op, d, want = w[1], w[2], w[3]
        nn, P, U = torch.nn, torch.nn.utils.parametrizations, torch.nn.utils
        R = torch.nn.utils.parametrize

        class Symmetric(nn.Module):
            def forward(self, x):
                return x.triu() + x.triu(1).mT

        class Scaled(nn.Module):
            def __init__(self):
                super().__init__()
                self.s = nn.Parameter(torch.ones(3))

            def forward(self, x):
                return x * self.s

        def reg(m, *ps):
            for p in ps:
                R.register_parametrization(m, "weight", p)
            return m

        def init(lin):
            lin = lin.to(T[d]).to(dev)
            set_ramps(lin, 1.0, d)
            return P.orthogonal(lin)
        shape, make = {
            "wn_lin": ([2, 3], lambda: P.weight_norm(nn.Linear(3, 4))),
            "wn_lin_none": ([2, 3], lambda: P.weight_norm(nn.Linear(3, 4), dim=None)),
            "wn_conv_d1": ([1, 2, 4, 4], lambda: P.weight_norm(nn.Conv2d(2, 3, 2), dim=1)),
            "wn_old_conv1d": ([1, 2, 5], lambda: U.weight_norm(nn.Conv1d(2, 3, 2))),
            "wn_old_gru_hh": ([4, 2, 3], lambda: U.weight_norm(nn.GRU(3, 4), name="weight_hh_l0")),
            "wn_old_gru_both": ([4, 2, 3], lambda: U.weight_norm(
                U.weight_norm(nn.GRU(3, 4), name="weight_ih_l0"), name="weight_hh_l0")),
            "wn_sn_lin": ([2, 3], lambda: P.spectral_norm(P.weight_norm(nn.Linear(3, 4)), name="bias")),
            "sn_lin": ([2, 3], lambda: P.spectral_norm(nn.Linear(3, 4))),
            "sn_lin_eval": ([2, 3], lambda: P.spectral_norm(nn.Linear(3, 4))),
            "sn_lin_it3": ([2, 3], lambda: P.spectral_norm(nn.Linear(3, 4), n_power_iterations=3)),
            "sn_convT": ([1, 2, 3, 3], lambda: P.spectral_norm(nn.ConvTranspose2d(2, 3, 2))),
            "sn_conv_d1": ([1, 2, 4, 4], lambda: P.spectral_norm(nn.Conv2d(2, 3, 2), dim=1)),
            "sn_bias": ([2, 3], lambda: P.spectral_norm(nn.Linear(3, 4), name="bias")),
            "sn_old_lin": ([2, 3], lambda: U.spectral_norm(nn.Linear(3, 4))),
            "sn_old_eval": ([2, 3], lambda: U.spectral_norm(nn.Linear(3, 4))),
            "sn_old_bias": ([2, 3], lambda: U.spectral_norm(nn.Linear(3, 4), name="bias")),
            "orth_sq": ([2, 3], lambda: P.orthogonal(nn.Linear(3, 3))),
            "orth_tall": ([2, 3], lambda: P.orthogonal(nn.Linear(3, 4))),
            "orth_wide": ([2, 4], lambda: P.orthogonal(nn.Linear(4, 3))),
            "orth_cayley": ([2, 3], lambda: P.orthogonal(nn.Linear(3, 3), orthogonal_map="cayley")),
            "orth_exp_tall": ([2, 3], lambda: P.orthogonal(nn.Linear(3, 4), orthogonal_map="matrix_exp")),
            "orth_hh_notriv": ([2, 3], lambda: P.orthogonal(nn.Linear(3, 4), use_trivialization=False)),
            "orth_init": ([2, 3], lambda: init(nn.Linear(3, 3))),
            "reg_sym": ([2, 3], lambda: reg(nn.Linear(3, 3), Symmetric())),
            "reg_two": ([2, 3], lambda: reg(nn.Linear(3, 3), Symmetric(), Scaled())),
        }[op]
        m = make().to(T[d]).to(dev)
        buffers = [b for _, b in m.named_buffers()]
        if op.endswith("_init"):  # as orthogonal() left it
            params = [p for _, p in m.named_parameters()]
        else:
            params = list(set_ramps(m, 1.0 if op.startswith("orth") else 0.25, d).values())
            with torch.no_grad():
                for k, b in enumerate(buffers):
                    b.copy_(ramp(list(b.shape), 3 + k % 2, 1.0, 0.5, d).detach())
        if op.endswith("_eval"):
            m.eval()
        x = ramp(shape, 5, 2.0, 0.75, d)
        out = m(x)
        if isinstance(out, tuple):
            out = out[0]
        if want == "out":
            return out.detach()
        if want.startswith("b"):
            return buffers[int(want[1:])].detach()
        weighted_backward(out)
        g = x.grad if want == "x" else params[int(want[1:])].grad
        if g is None:
            raise ValueError("no gradient")
        return g

    def scat_case(w):
        """scatter_add / scatter / index_add on a [3, 4] ramp from a ramp source."""
        op, d, want = w[1], w[2], w[3]
        x = ramp([3, 4], 5, 2.0, 0.75, d)
        src = ramp([3, 5] if op == "scatter_add_small" else [2, 4], 4, 1.0, 0.5, d)
        i64 = lambda v: torch.tensor(v, device=dev)  # noqa: E731
        rows = i64([[0, 1, 2, 0], [2, 0, 1, 1]])
        cols = i64([[3, 1], [0, 0], [2, 3]])
        if op == "scatter_add":
            out = x.scatter_add(0, rows, src)
        elif op == "scatter_add_small":
            out = x.scatter_add(0, rows, src)
        elif op == "scatter_add_d1":
            src = ramp([3, 2], 4, 1.0, 0.5, d)
            out = x.scatter_add(1, cols, src)
        elif op == "scatter":
            out = x.scatter(0, rows, src)
        elif op == "scatter_d1":
            src = ramp([3, 2], 4, 1.0, 0.5, d)
            out = x.scatter(1, i64([[3, 1], [0, 2], [2, 3]]), src)
        elif op == "scatter_value":
            out = x.scatter(1, i64([[1], [0], [3]]), 2.5 if x.is_floating_point() else 2)
        elif op in ("index_add", "index_add_alpha"):
            src = ramp([3, 4], 4, 1.0, 0.5, d)
            alpha = 2 if op == "index_add_alpha" else 1
            out = x.index_add(0, i64([2, 0, 2]), src, alpha=alpha)
        elif op == "index_add_d1":
            src = ramp([3, 2], 4, 1.0, 0.5, d)
            out = x.index_add(1, i64([3, 1]), src)
        elif op == "scatter_add_":
            out = x.detach().clone()
            out.scatter_add_(0, rows, src.detach())
        elif op == "index_add_":
            out = x.detach().clone()
            out.index_add_(1, i64([3, 1]), ramp([3, 2], 4, 1.0, 0.5, d).detach())
        elif op == "scatter_bad":
            out = x.scatter_add(0, i64([[0, 3, 0, 0]]), src)
        elif op == "scatter_i32":
            out = x.scatter_add(0, rows.int(), src)
        else:
            out = x.index_add(0, i64([0, 1]), src[:, :3])
        return result_or_grad(out, want, {"x": x, "y": src})

    def adv_case(w):
        """Advanced indexing and index_put on a [2, 3, 4] ramp (mirrors `adv_case` in
        torch_parity.rs)."""
        op, d, want = w[1], w[2], w[3]
        x = ramp([2, 3, 4], 7, 3.0, 0.5, d)
        ix = lambda v, dt=torch.int64: torch.tensor(v, dtype=dt, device=dev)  # noqa: E731
        i, j = ix([2, 0]), ix([1, 3])
        m = ix([[True, False, True], [False, True, False]], torch.bool)
        v2 = ramp([2], 3, 1.0, 1.5, d)
        v = v2
        if op.startswith("set_"):
            y = x.detach().clone()
            if op == "set_scalar":
                y[:, i, j] = 2
            elif op == "set_slice":
                y[:, 0] = 2.5
            elif op == "set_mask":
                y[m] = 0
            elif op == "set_tensor":
                y[0, 1] = ix([1, -2, 3, 0])
            elif op == "set_float":
                y[ix([1, 0]), 1:3] = -1.5
            # torch refuses a number that overflows the dtype (`checked_convert`).
            elif op == "set_big":
                y[:, 0] = 300
            elif op == "set_neg":
                y[0] = -1
            elif op == "set_fill_big":
                y.fill_(70000.0)
            elif op == "set_fill_nan":
                y.fill_(math.nan)
            elif op == "set_fill_neg":
                y.fill_(-1)
            elif op == "set_fill_negf":
                y.fill_(-1.0)
            elif op == "set_masked_negf":
                y = y.masked_fill(m[..., None], -2.0)
            elif op == "set_masked_big":
                y = y.masked_fill(m, 256)
            elif op == "set_full_like_big":
                y = torch.full_like(y, 2 ** 31)
            else:
                y = y.index_fill(0, ix([0]), -256)
            return y
        out = {
            "pair": lambda: x[:, i, j], "int_sep": lambda: x[0, :, j],
            "sep": lambda: x[ix([1, 0]), :, j], "int_adj": lambda: x[:, i, 1],
            "bcast": lambda: x[..., ix([[2], [0]]), j], "none_sep": lambda: x[None, ix([1, 0]), :, j],
            "mask2": lambda: x[m], "mask_int": lambda: x[m, 1],
            "mask_mid": lambda: x[:, m[0], j], "t0": lambda: x[ix(1), :, j],
            "list": lambda: x[[1, 0]], "list_pair": lambda: x[[0, 1], [1, 2]],
            "bool0": lambda: x[ix(True, torch.bool)], "bool0_false": lambda: x[ix(False, torch.bool)],
            "neg": lambda: x[:, ix([-1, 0]), ix([-4, 2])],
            "u8mask": lambda: x[0, ix([1, 0, 1], torch.uint8)],
            "empty": lambda: x[:, ix([], torch.int64), j[:0]],
            "bad_bcast": lambda: x[:, ix([0, 1, 2]), ix([0, 1])],
            "oob": lambda: x[:, i, ix([4, 0])],
        }.get(op)
        if out is not None:
            out = out()
        else:
            if op == "put":
                out = x.index_put((ix([0]), i, j), v2)
            elif op == "put_acc":
                out = x.index_put((ix([0, 0]), ix([1, 1]), ix([2, 2])), v2, accumulate=True)
            elif op == "put_bcast":
                v = ramp([4], 3, 1.0, 1.5, d)
                out = x.index_put((ix([1, 0]),), v)
            elif op == "put_mask":
                v = ramp([4], 3, 1.0, 1.5, d)
                out = x.index_put((m,), v)
            elif op == "put_basic":
                v = ramp([3, 4], 5, 1.0, 0.5, d)
                out = x.index_put((ix([1]),), v)
            elif op == "put_bad":
                v = ramp([3], 3, 1.0, 1.5, d)
                out = x.index_put((ix([0]), i, j), v)
            else:
                v = v2.detach().to(torch.float64 if d != "f64" else torch.float32)
                out = x.index_put((ix([0]), i, j), v)
        return result_or_grad(out, want, {"x": x, "y": v})

    def einsum_case(w):
        """einsum on ramps: the result, or the gradient for its first (x) or second (y) operand."""
        op, d, want = w[1], w[2], w[3]
        eq, shapes = EINSUM[op]
        ts = [ramp(s, 5 + i, 2.0, 0.5 + 0.25 * i, d) for i, s in enumerate(shapes)]
        out = torch.einsum(eq, *ts)
        return result_or_grad(out, want, {"x": ts[0], "y": ts[1] if len(ts) > 1 else None})

    def cls_case(w):
        """cross_entropy / nll_loss with torch's options on ramp scores (4 rows of 3 classes,
        or [2, 3, 2, 2] with extra dimensions): the loss, or the gradient for the scores."""
        op, d, want = w[1], w[2], w[3]
        F = torch.nn.functional
        kdim = "kdim" in op
        x = ramp([2, 3, 2, 2] if kdim else [3] if op == "ce_1d" else [4, 3], 7, 3.0, 0.4, d)
        weight = torch.tensor([0.5, 2.0, 1.25], dtype=T[d], device=dev)
        labels = {"ce_ignore": [2, -100, 1, 0], "ce_ignore_none": [2, -100, 1, 0],
                  "ce_all_ignored": [-100] * 4, "nll_ignore1": [2, 1, 1, 0],
                  "ce_ls_w": [2, -100, 1, 0], "ce_bad_label": [2, 3, 1, 0]}.get(op, [2, 0, 1, 1])
        t = torch.tensor(labels, device=dev)
        if kdim:
            t = torch.tensor([[[0, 2], [1, -100]], [[2, 2], [0, 1]]], device=dev)
        if op == "ce_1d":
            t = torch.tensor(1, device=dev)
        if "prob" in op:
            t = ramp([4, 3], 5, 0.0, 0.2, d).detach()
            t = t / t.sum(1, keepdim=True)
        kw = {}
        if "_w" in op:
            kw["weight"] = weight
        if op == "ce_bad_w":
            kw["weight"] = weight[:2]
        if "_ls" in op:
            kw["label_smoothing"] = 0.2
        if op == "nll_ignore1":
            kw["ignore_index"] = 1
        for red in ("sum", "none"):
            if op.endswith("_" + red):
                kw["reduction"] = red
        if op.startswith("nll"):
            out = F.nll_loss(x, t, **kw)
        else:
            out = F.cross_entropy(x, t, **kw)
        return out_or_grad(out, x, want)

    def sched_case(w):
        p = torch.nn.Parameter(torch.zeros(1))
        opt = torch.optim.SGD([p], lr=0.1)
        S = torch.optim.lr_scheduler
        sched = {"step": lambda: S.StepLR(opt, 3, 0.5), "exp": lambda: S.ExponentialLR(opt, 0.9),
                 "cos": lambda: S.CosineAnnealingLR(opt, 5), "cos_min": lambda: S.CosineAnnealingLR(opt, 4, 0.01),
                 "multistep": lambda: S.MultiStepLR(opt, [2, 5, 5, 9], 0.5),
                 "linear": lambda: S.LinearLR(opt), "linear_up": lambda: S.LinearLR(opt, 0.25, 0.75, 6),
                 "lambda": lambda: S.LambdaLR(opt, lambda e: 1.0 / (1.0 + e)),
                 "warm_restarts": lambda: S.CosineAnnealingWarmRestarts(opt, 3, 2, 0.01),
                 "warm_restarts_flat": lambda: S.CosineAnnealingWarmRestarts(opt, 4),
                 "plateau": lambda: S.ReduceLROnPlateau(opt, factor=0.5, patience=2, cooldown=1),
                 "plateau_max": lambda: S.ReduceLROnPlateau(opt, "max", factor=0.3, patience=1, min_lr=0.005),
                 "plateau_abs": lambda: S.ReduceLROnPlateau(opt, factor=0.5, patience=1, threshold=0.06,
                                                            threshold_mode="abs")}[w[1]]()
        # The watched metric for the plateau schedules: falls, stalls, falls a little, stalls.
        metrics = [1.0, 0.9, 0.95, 0.95, 0.95, 0.8, 0.85, 0.78, 0.85, 0.85, 0.7, 0.7, 0.69, 0.7]
        rates = []
        for m in metrics:
            opt.step()
            if w[1].startswith("plateau"):
                sched.step(m if w[1] != "plateau_max" else -m)
            else:
                sched.step()
            rates.append(opt.param_groups[0]["lr"])
        return torch.tensor(rates, dtype=torch.float64)

    def clip_case(w):
        kind, d, v = w[1], w[2], float(w[3])
        p1 = torch.nn.Parameter(ramp([2, 3], 5, 2.0, 0.75, d).detach())
        p2 = torch.nn.Parameter(ramp([4], 3, 1.0, 2.0, d).detach())
        (p1 * ramp([2, 3], 4, 1.0, 0.5, d).detach()).sum().backward()
        (p2 * p2).sum().backward()
        if kind == "norm":
            head = [torch.nn.utils.clip_grad_norm_([p1, p2], v).reshape(1)]
        else:
            torch.nn.utils.clip_grad_value_([p1, p2], v)
            head = []
        return torch.cat([t.flatten().double() for t in head + [p1.grad, p2.grad]])

    def rnn_case(w):
        """A recurrent layer with ramp weights on a ramp sequence: its output, final states,
        or the gradient of sum(output * w) for the input, the first layer's weights, or h_0."""
        op, d, want = w[1], w[2], w[3]
        nn = torch.nn
        kind = op.split("_")[0]
        cls = {"rnn": nn.RNN, "rnnrelu": nn.RNN, "lstm": nn.LSTM, "lstm2": nn.LSTM, "gru": nn.GRU,
               "gru2": nn.GRU}[kind]
        kw = {"num_layers": 2 if kind in ("lstm2", "gru2") else 1,
              "batch_first": kind == "lstm2", "bias": op != "gru_nobias",
              "bidirectional": op.endswith("_bi")}
        if kind == "rnnrelu":
            kw["nonlinearity"] = "relu"
        m = cls(3, 4, **kw).to(T[d]).to(dev)
        set_ramps(m, 0.2, d)
        unbatched = op.endswith("_unbatched")
        packed = "_packed" in op
        lengths = [4, 2, 3] if "unsorted" in op else [4, 3, 2]
        if packed:
            x = ramp([4, 3, 3], 7, 3.0, 0.4, d)
            xs = torch.nn.utils.rnn.pack_padded_sequence(x, lengths, enforce_sorted="unsorted" not in op)
        else:
            x = xs = ramp([3, 3] if unbatched else [3, 2, 3], 7, 3.0, 0.4, d)
        layers = kw["num_layers"] * (2 if kw["bidirectional"] else 1)
        n = 3 if packed else 2
        h0 = ramp([layers, 4] if unbatched else [layers, n, 4], 3, 1.0, 0.3, d)
        if kind.startswith("lstm"):
            c0 = ramp(list(h0.shape), 4, 2.0, 0.25, d)
            out, (hn, cn) = m(xs, (h0, c0))
        else:
            out, hn = m(xs, h0)
            cn = None
        if packed:
            out = out.data
        if want in ("out", "hn", "cn"):
            return {"out": out, "hn": hn, "cn": cn}[want].detach()
        weighted_backward(out)
        params = dict(m.named_parameters())
        g = {"x": x.grad, "h0": h0.grad, "wih": params["weight_ih_l0"].grad,
             "whh": params["weight_hh_l0"].grad,
             "bhh": params["bias_hh_l0"].grad if "bias_hh_l0" in params else None}[want]
        if g is None:
            raise ValueError("no gradient")
        return g

    def tfm_case(w):
        """Transformer decoder layers and stacks on ramps with a causal target mask: the
        output, or the gradient of sum(out * w) for the target (q), the memory or source
        (mem), or a weight."""
        op, d, want = w[1], w[2], w[3]
        nn = torch.nn
        causal = torch.ones(3, 3, dtype=torch.bool, device=dev).triu(1)
        tgt, mem = ramp([3, 2, 8], 7, 3.0, 0.4, d), ramp([4, 2, 8], 5, 2.0, 0.35, d)
        if op.startswith("dec"):
            m = nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, dropout=0.0,
                                           activation="gelu" if op == "dec_pre" else "relu",
                                           norm_first=op == "dec_pre")
        elif op == "encstack":
            m = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0),
                                      2, norm=nn.LayerNorm(8), enable_nested_tensor=False)
        else:
            m = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=1,
                               dim_feedforward=16, dropout=0.0)
        m = m.to(T[d]).to(dev)
        params = set_ramps(m, 0.3, d)
        if op.startswith("dec"):
            out = m(tgt, mem, tgt_mask=causal)
            names = ("multihead_attn.in_proj_weight", "linear2.weight")
        elif op == "encstack":
            out = m(tgt, mask=causal)
            names = ("layers.0.self_attn.in_proj_weight", "layers.1.linear2.weight")
        else:
            out = m(mem, tgt, tgt_mask=causal)
            names = ("encoder.layers.0.self_attn.in_proj_weight", "decoder.layers.0.linear2.weight")
        inputs = {"q": tgt, "mem": mem, "inw": params[names[0]], "outw": params[names[1]]}
        return result_or_grad(out, want, inputs)

    def cell_case(w):
        """A recurrent cell with ramp weights stepped twice by hand: the last hidden (or cell)
        state, or the gradient of sum(h * w) for the input, h_0 or a weight."""
        op, d, want = w[1], w[2], w[3]
        nn = torch.nn
        kind = op.split("_")[0]
        cls = {"rnncell": nn.RNNCell, "lstmcell": nn.LSTMCell, "grucell": nn.GRUCell}[kind]
        kw = {"bias": not op.endswith("_nobias")}
        if op == "rnncell_relu":
            kw["nonlinearity"] = "relu"
        m = cls(3, 4, **kw).to(T[d]).to(dev)
        set_ramps(m, 0.2, d)
        unbatched = op.endswith("_unbatched")
        x = ramp([2, 3] if unbatched else [2, 2, 3], 7, 3.0, 0.4, d)
        h0 = ramp([4] if unbatched else [2, 4], 3, 1.0, 0.3, d)
        h, c = h0, (ramp(list(h0.shape), 4, 2.0, 0.25, d) if kind == "lstmcell" else None)
        for t in range(2):
            if kind == "lstmcell":
                h, c = m(x[t], (h, c))
            else:
                h = m(x[t], h)
        if want in ("out", "cn"):
            return (h if want == "out" else c).detach()
        weighted_backward(h)
        params = dict(m.named_parameters())
        g = {"x": x.grad, "h0": h0.grad, "wih": params["weight_ih"].grad,
             "whh": params["weight_hh"].grad,
             "bhh": params["bias_hh"].grad if "bias_hh" in params else None}[want]
        if g is None:
            raise ValueError("no gradient")
        return g

    def attn_case(w):
        """Scaled dot-product attention and multi-head attention on ramps: the output, the
        head-averaged weights, or the gradient of sum(output * w) for an input or weight."""
        op, d, want = w[1], w[2], w[3]
        F = torch.nn.functional
        # Key 3 of every query's row is masked out for the bool masks (no row fully masked).
        allow = torch.tensor([[j != 3 or i == 0 for j in range(5)] for i in range(3)], device=dev)
        if op.startswith("sdpa"):
            q, k = ramp([2, 2, 3, 4], 7, 3.0, 0.3, d), ramp([2, 2, 5, 4], 5, 2.0, 0.4, d)
            v = ramp([2, 2, 5, 3], 4, 1.0, 0.5, d)
            mask = {"sdpa_bool": allow, "sdpa_float": ramp([3, 5], 3, 1.0, 0.5, d).detach()}.get(op)
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=op == "sdpa_causal",
                                                 scale=0.5 if op == "sdpa_scale" else None)
            inputs = {"q": q, "k": k, "v": v}
        elif op.startswith("enc"):
            bf = op == "enc_kpm"
            m = torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0,
                                                 activation="gelu" if op == "enc_pre" else "relu",
                                                 batch_first=bf, norm_first=op == "enc_pre")
            m = m.to(T[d]).to(dev)
            set_ramps(m, 0.3, d)
            x = ramp([2, 3, 8] if bf else [3, 2, 8], 7, 3.0, 0.4, d)
            kpm = torch.tensor([[False] * 3, [False, False, True]], device=dev) if bf else None
            out = m(x, src_key_padding_mask=kpm)
            params = dict(m.named_parameters())
            inputs = {"q": x, "inw": params["self_attn.in_proj_weight"], "outw": params["linear1.weight"]}
        else:
            bf = op == "mha_kpm"
            m = torch.nn.MultiheadAttention(4, 2, batch_first=bf).to(T[d]).to(dev)
            set_ramps(m, 0.3, d)
            x = ramp([2, 3, 4] if bf else [3, 2, 4], 7, 3.0, 0.4, d)
            kv = ramp([5, 2, 4], 6, 2.0, 0.35, d) if op == "mha_cross" else x
            kpm = torch.tensor([[False] * 3, [False, False, True]], device=dev) if bf else None
            am = ramp([3, 3], 3, 1.0, 0.5, d).detach() if op == "mha_amask" else None
            out, weights = m(x, kv, kv, key_padding_mask=kpm, attn_mask=am)
            if want == "w":
                return weights.detach()
            inputs = {"q": x, "inw": m.in_proj_weight, "outw": m.out_proj.weight}
        return result_or_grad(out, want, inputs)

    def amp_case(w):
        """An op or a small layer in a `torch.autocast` region of dtype w[2] on this device,
        on float32 ramps (the weights too, as a model's are): its result, or the float32
        gradient of sum(result * w) for its input (x), a weight (w) or a bias (b). `amp64`:
        the same in float64 without a region, the reference both sides are measured against."""
        op, d, want = w[1], w[2], w[3]
        work = "f64" if w[0] == "amp64" else "f32"
        F, nn = torch.nn.functional, torch.nn
        x = ramp([4, 3], 5, 2.0, 0.37, work)
        lw, lb = ramp([5, 3], 7, 3.0, 0.29, work), ramp([5], 3, 1.0, 0.41, work)
        img = ramp([2, 2, 5, 5], 6, 2.5, 0.3, work)
        kw, kb = ramp([3, 2, 3, 3], 5, 2.0, 0.2, work), ramp([3], 3, 1.0, 0.3, work)
        nw, nb = ramp([5], 4, 1.0, 0.5, work), ramp([5], 3, 1.0, 0.25, work)
        cw, cb = ramp([3], 4, 1.0, 0.5, work), ramp([3], 3, 1.0, 0.25, work)
        target = ramp([4, 5], 6, 2.0, 0.3, work).detach()
        probs = ramp([4, 5], 5, 0.0, 0.2, work).detach()  # 0 .. 0.8, for the BCE targets
        labels = torch.tensor([0, 4, 2, 1], device=dev)
        inputs = {"x": x, "w": lw, "b": lb}

        region = contextlib.nullcontext() if work == "f64" else torch.autocast(dev.type, dtype=T[d])
        with region:
            h = F.linear(x, lw, lb)
            conv = lambda: F.conv2d(img, kw, kb, padding=1)  # noqa: E731
            if op == "linear":
                out = h
            elif op == "matmul":
                out = x @ lw.t()
            elif op == "dot":
                out = torch.dot(x[0], x[1])
            elif op == "bmm":
                a, b = ramp([2, 3, 4], 7, 3.0, 0.3, work), ramp([2, 4, 2], 5, 2.0, 0.4, work)
                out, inputs = a @ b, {"x": a, "w": b}
            elif op == "conv":
                out, inputs = conv(), {"x": img, "w": kw, "b": kb}
            elif op == "convT":
                t, tw = ramp([1, 2, 3, 3], 5, 2.0, 0.4, work), ramp([2, 3, 2, 2], 7, 3.0, 0.3, work)
                out, inputs = F.conv_transpose2d(t, tw, kb, stride=2), {"x": t, "w": tw, "b": kb}
            elif op == "sdpa":
                q, k = ramp([2, 3, 4], 7, 3.0, 0.3, work), ramp([2, 5, 4], 5, 2.0, 0.4, work)
                v = ramp([2, 5, 3], 4, 1.0, 0.5, work)
                out, inputs = F.scaled_dot_product_attention(q, k, v), {"x": q, "w": k, "b": v}
            elif op == "ce":
                out = F.cross_entropy(h, labels)
            elif op == "nll":
                out = F.nll_loss(F.log_softmax(h, 1), labels)
            elif op == "mse":
                out = F.mse_loss(h, target)
            elif op == "l1":
                out = F.l1_loss(h, target)
            elif op == "bce":
                out = F.binary_cross_entropy(torch.sigmoid(h), probs)
            elif op == "bcel":
                out = F.binary_cross_entropy_with_logits(h, probs)
            elif op == "softmax":
                out = torch.softmax(h, 1)
            elif op == "logsoftmax":
                out = torch.log_softmax(h, 1)
            elif op == "ln":
                out = F.layer_norm(h, [5], nw, nb)
                inputs = {"x": x, "w": nw, "b": nb}
            elif op == "gn":
                out, inputs = F.group_norm(conv(), 3, cw, cb), {"x": img, "w": cw, "b": cb}
            elif op == "bn":
                out = F.batch_norm(conv(), None, None, cw, cb, training=True)
                inputs = {"x": img, "w": cw, "b": cb}
            elif op == "relu":
                out = F.relu(h)
            elif op == "addf32":
                out = h + target
            elif op == "prod":
                out = h.prod(1)
            elif op == "cumsum":
                out = h.cumsum(1)
            elif op == "norm":
                out = h.norm(dim=1)
            elif op == "exp":
                out = torch.exp(h)
            elif op == "sinh":
                out = torch.sinh(h)
            elif op == "log":
                out = torch.log(h.abs() + 1)
            elif op == "pow":
                out = torch.pow(h, 3)
            elif op == "square":
                out = torch.square(h)
            elif op == "sum":
                out = h.sum(1)
            elif op == "mean":
                out = h.mean(1)
            elif op == "var":
                out = h.var(1)
            elif op == "elu":
                out = F.elu(h)
            elif op == "mish":
                out = F.mish(h)
            elif op == "avgpool":
                out = F.avg_pool2d(conv(), 2)
                inputs = {"x": img, "w": kw, "b": kb}
            elif op == "interp":
                out = F.interpolate(conv(), scale_factor=2, mode="bilinear")
                inputs = {"x": img, "w": kw, "b": kb}
            elif op in ("lstm", "gru"):
                m = (nn.LSTM if op == "lstm" else nn.GRU)(3, 4).to(T[work]).to(dev)
                p = set_ramps(m, 0.2, work)
                xs = ramp([3, 2, 3], 7, 3.0, 0.4, work)
                out, _ = m(xs)
                inputs = {"x": xs, "w": p["weight_ih_l0"], "b": p["bias_hh_l0"]}
            elif op == "mha":
                m = nn.MultiheadAttention(4, 2).to(T[work]).to(dev)
                p = set_ramps(m, 0.3, work)
                xs = ramp([3, 2, 4], 7, 3.0, 0.4, work)
                out, _ = m(xs, xs, xs)
                inputs = {"x": xs, "w": p["in_proj_weight"], "b": p["out_proj.weight"]}
            else:
                raise ValueError(f"unknown amp case {op}")
        return result_or_grad(out, want, inputs)

    def scaler_case(w):
        """Four steps of SGD through a GradScaler (init_scale 1024, growth_interval 2) on one
        float32 parameter: `clean` steps, `inf` (the second step's gradient overflows),
        `unscale` (unscale_ and clip_grad_norm_ before each step), `growth` (interval 1):
        the parameter after each step and the scale after each update, joined."""
        c = w[1]
        p = torch.nn.Parameter(ramp([3], 3, 1.0, 0.5, "f32").detach())
        opt = torch.optim.SGD([p], lr=0.1)
        scaler = torch.amp.GradScaler(dev.type, init_scale=1024.0, growth_interval=1 if c == "growth" else 2)
        seen = []
        for step in range(4):
            opt.zero_grad()
            k = torch.tensor([1.0, -2.0, 0.5], device=dev) * (step + 1)
            if c == "inf" and step == 1:
                k = torch.tensor([1.0, float("inf"), 0.5], device=dev)
            loss = (p * p * k).sum()
            scaler.scale(loss).backward()
            if c == "unscale":
                scaler.unscale_(opt)
                torch.nn.utils.clip_grad_norm_([p], 1.0)
            scaler.step(opt)
            scaler.update()
            seen += [t.item() for t in p.detach().flatten()] + [scaler.get_scale()]
        return torch.tensor(seen, dtype=torch.float32, device=dev)

    def run(w):
        kind, op, d = w[0], w[1], w[2]
        if kind in ("amp", "amp64"):
            return amp_case(w)
        if kind == "scaler":
            return scaler_case(w)
        if kind == "attn":
            return attn_case(w)
        if kind == "rnn":
            return rnn_case(w)
        if kind == "cell":
            return cell_case(w)
        if kind == "tfm":
            return tfm_case(w)
        if kind == "sched":
            return sched_case(w)
        if kind == "cls":
            return cls_case(w)
        if kind == "scat":
            return scat_case(w)
        if kind == "einsum":
            return einsum_case(w)
        if kind == "adv":
            return adv_case(w)
        if kind == "clip":
            return clip_case(w)
        if kind == "norm":
            return norm_case(w)
        if kind == "param":
            return param_case(w)
        if kind == "fcall":
            return fcall_case(w)
        if kind == "agrad":
            return agrad_case(w)
        if kind == "jac":
            return jac_case(w)
        if kind == "prune":
            return prune_case(w)
        if kind == "func":
            return func_case(w)
        if kind == "more":
            return more_case(w)
        if kind == "empty":
            return empty_case(w)
        if kind == "arange":
            args = {"int": (0, 5), "float": (0.0, 5.0), "step": (1.0, 2.0, 0.25), "down": (5, 0, -2),
                    "tenth": (0.0, 1.0, 0.1), "empty": (3, 3), "zero_step": (0, 5, 0),
                    "wrong_way": (5.0, 0.0, 1.0)}[op]
            return torch.arange(*args, device=dev)
        if kind in ("grad", "sgrad", "rgrad"):
            return gradient(w)
        if kind == "view":
            return view_case(w)
        if kind == "optim":
            return optim_case(w)
        if kind == "nn":
            return nn_case(w)
        a = mk(d, 2 if kind.startswith("s") else 0)
        b = (lambda: mk(w[3], 1))
        if kind in ("bin", "sbin", "inp"):
            return binary(op, a, b())
        if kind == "tbin":
            return binary(op, a.t(), b().t())
        if kind in ("bins", "inps"):
            return binary(op, a, scalar(w[3]))
        if kind in ("un", "sun"):
            return getattr(torch, op)(a, 1) if "softmax" in op else getattr(torch, op)(a)
        if kind == "not":
            return torch.logical_not(a)
        if kind in ("red", "sred"):
            return reduce(op, a)
        if kind in ("row", "col"):
            rhs = b()[1] if kind == "row" else b()[:, 2:3]
            return getattr(torch, op)(a, rhs)
        if kind == "zero":
            return getattr(torch, op)(a, b()[1, 1])
        if kind == "zlhs":
            return getattr(torch, op)(b()[1, 1], a)
        if kind == "cast":
            return a.to(T[w[3]])
        if kind == "where":
            return torch.where(mk("bool", 1), a, b())
        if kind == "zwhere":
            return torch.where(mk("bool", 1), a, b()[1, 1])
        if kind == "cat":
            return torch.cat([a, b()], 0)
        if kind == "stack":
            return torch.stack([a, b()], 1)
        if kind == "matmul":
            return a @ b().t()
        if kind == "tmatmul":
            return a.t() @ b()
        raise ValueError(f"unknown case kind {kind!r}")

    out = {}
    for line in lines:
        try:
            r = run(line.split())
            out[line] = f"{names[r.dtype]} {list(r.shape)} {r.double().flatten().cpu().tolist()}"
        except Exception as e:  # torch's error is the expected result
            out[line] = "ERR " + str(e).split("\n")[0]
    return out, torch.__version__


def ours(lines, exe, device):
    if exe is None:
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "gpulab", "--example", "torch_parity"],
                       cwd=ROOT, check=True)
        exe = ROOT / "target" / "release" / "examples" / "torch_parity"
    p = subprocess.run([str(exe), "--device", device], input="\n".join(lines) + "\n",
                       capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        sys.exit(f"{exe} failed with status {p.returncode}:\n{p.stderr[-3000:]}")
    got = dict(l.split(" => ", 1) for l in p.stdout.splitlines() if " => " in l)
    missing = [l for l in lines if l not in got]
    if missing:
        sys.exit(f"{exe} gave no result for {len(missing)} cases, first {missing[0]!r}")
    return got


def parse(s):
    if s.startswith("ERR") or s == "PANIC":
        return None
    dtype, rest = s.split(" ", 1)
    shape, vals = rest.split("] ", 1)
    consts = {"nan": math.nan, "NaN": math.nan, "inf": math.inf, "Infinity": math.inf}
    return dtype, shape + "]", eval(vals, {"__builtins__": {}}, consts)


def tolerance(dtype, device):
    """Relative: a few units in the last place of the result's dtype (bf16 and f16 results are
    rounded from float32 work on both sides, and may land one unit apart)."""
    return {"F64": 1e-12, "F32": 2e-6 if device == "cpu" else 1e-5, "F16": 2e-3, "BF16": 1.6e-2}.get(dtype, 0.0)


# One unit in the last place of the lower precision, at 1: what an autocast result may differ
# by, relative to its largest value, beyond torch's own distance from float64.
AMP_ULP = {"bf16": 2.0 ** -8, "f16": 2.0 ** -11}


def amp_reference(line):
    """The float64 case an `amp` case is measured against (`amp linear bf16 x` ->
    `amp64 linear f64 x`), or None."""
    w = line.split()
    return f"amp64 {w[1]} f64 {w[3]}" if w[0] == "amp" else None


def amp_differs(a, b, exact, region):
    """An autocast result in the lower precision (or float32 from it): both sides round at
    different steps, so neither is the other's to a few ulps; gpulab's must be as close to
    the float64 result as torch's is (twice its distance, plus one ulp of the largest value),
    with NaN and infinities where torch has them."""
    e = parse(exact)
    if e is None or e[1] != a[1]:
        return "no float64 reference"
    scale = max((abs(v) for v in e[2] if math.isfinite(v)), default=0.0)
    ours = theirs = 0.0
    for x, y, z in zip(a[2], b[2], e[2]):
        if not (math.isfinite(x) and math.isfinite(y)):
            if not (x == y or (math.isnan(x) and math.isnan(y))):
                return "values differ"
            continue
        ours, theirs = max(ours, abs(x - z)), max(theirs, abs(y - z))
    if ours > 2 * theirs + AMP_ULP[region] * scale:
        return f"further from float64 than torch: {ours:.3g} vs {theirs:.3g} (largest value {scale:.3g})"
    return None


def differs(mine, theirs, device, exact=None, region=None):
    """None when the results agree, else why not. `exact` (with the autocast `region`'s
    dtype): the float64 result an autocast case is measured against."""
    if mine == "PANIC":
        return "gpulab panicked"
    a, b = parse(mine), parse(theirs)
    if a is None or b is None:
        return None if a is None and b is None else "one side is an error"
    if a[:2] != b[:2]:
        return f"dtype/shape {a[0]}{a[1]} vs torch {b[0]}{b[1]}"
    if exact is not None:
        return amp_differs(a, b, exact, region)
    tol = tolerance(a[0], device)
    for x, y in zip(a[2], b[2]):
        if x == y or (math.isnan(x) and math.isnan(y)):
            continue
        if not all(map(math.isfinite, (x, y))) or abs(x - y) > tol * max(1.0, abs(y)):
            return "values differ"
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--exe", type=Path, help="the built torch_parity example")
    ap.add_argument("--expected", type=Path, help="torch's recorded results (gzip), instead of live torch")
    ap.add_argument("--record", type=Path, help="write torch's results here (gzip) and stop")
    ap.add_argument("--json", action="store_true", help="print a summary object last")
    ap.add_argument("--show", type=int, default=40, help="how many differences to print")
    a = ap.parse_args()
    lines = cases()
    if a.expected:
        with gzip.open(a.expected, "rt") as f:
            header = json.loads(f.readline())
            ref = dict(l.rstrip("\n").split(" => ", 1) for l in f)
        version = header["torch"]
        lines = [l for l in lines if l in ref]
    else:
        ref, version = torch_results(lines, a.device)
    if a.record:
        with gzip.open(a.record, "wt") as f:
            f.write(json.dumps({"torch": version, "device": a.device, "cases": len(lines)}) + "\n")
            f.writelines(f"{l} => {ref[l]}\n" for l in lines)
        print(f"recorded {len(lines)} results of torch {version} on {a.device} in {a.record}")
        return 0
    mine = ours(lines, a.exe, a.device)
    bad, known = [], []
    for l in lines:
        exact = ref.get(amp_reference(l))
        why = differs(mine[l], ref[l], a.device, exact, l.split()[2] if exact else None)
        if why:
            (known if l in KNOWN else bad).append((l, why))
    print(f"{len(lines)} cases on {a.device}, torch {version}: {len(lines) - len(bad) - len(known)} agree, "
          f"{len(known)} known differences, {len(bad)} differ")
    for l, why in bad[: a.show]:
        print(f"  {l}: {why}\n    gpulab: {mine[l][:160]}\n    torch:  {ref[l][:160]}")
    for l, _ in known:
        print(f"  known: {l} ({KNOWN[l]})")
    if a.json:
        print(json.dumps({"device": a.device, "torch": version, "cases": len(lines), "differ": len(bad),
                          "known": len(known), "first": [f"{l}: {why}" for l, why in bad[:20]]}))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
