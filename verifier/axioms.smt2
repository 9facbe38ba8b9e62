; axioms.smt2: the operator axioms the verifier proves rules from (SMT-LIB 2, loaded through the
; Z3 C API by verifier/verify_axioms.c).
;
; Tensors are the uninterpreted sort T; integer operator parameters are Int arguments. Each op of
; the generation set has one function here, named by ops_table[op].z3 (split: split0/split1, the
; first n entries along an axis and the rest; const_ones: const_onesR for rank R). (dim x i) is
; the size of dimension i of x. Every axiom is a top-level (assert (! (forall ...) :named NAME))
; with exactly one ';;' comment line above it, and explicit :pattern triggers.
;
; Invariant (checked by `tasc axioms check` on every small shape): for every instantiation where
; the terms of a trigger are well typed and the side conditions hold, every term of the axiom is
; well typed and both sides are equal on random values through the CPU references. So rewriting
; from well-typed terms only ever makes well-typed terms. Elementwise ops are taken without
; broadcasting (operands of equal shape), as the rule generator makes them.
;
; Ill-shaped terms: the dim_* axioms give every term dims 0..3, well typed or not (matmul(x,y) has
; (dim x 0, dim y 1, 1, 1) whatever the inner dims; ewadd and ewmul have -1 where their operands
; differ); dims past a tensor's rank are 1 (the verifier asserts that for a rule's variables). An
; axiom whose two sides could get different dims on an ill-shaped instance would let Z3 derive
; 2 = 3 and so prove anything once some axiom builds such a term (an unguarded matmul_imm_l and
; matmul_imm_r made matmul(I_2, I_3) both I_2 and I_3). So wherever that can happen the side
; conditions require the sizes to match (the identity's size equal to the operand's dim, the
; ones' shape equal to x's, ...), and `tasc axioms check` also instantiates every axiom with each
; size and dim off by one and fails any whose sides' dims then differ where the side conditions
; let the instance through.

(declare-sort T 0)
(declare-fun dim (T Int) Int)                      ; x i: size of dimension i of x

; enum values, as ops/ops.h numbers them (the verifier checks they agree)
(define-fun NONE () Int 0)                         ; ops_act: no activation
(define-fun RELU () Int 1)                         ; ops_act: relu
(define-fun SAME () Int 1)                         ; ops_padmode: ceil(H/stride) outputs
(define-fun VALID () Int 2)                        ; ops_padmode: no padding
(define-fun SWAP () Int 10)                        ; transpose perm [1,0], written as its digits

(declare-fun conv2d (Int Int Int Int Int T T) T)   ; stride_h stride_w pad groups act x w
(declare-fun matmul (Int T T) T)                   ; act x y (2-D)
(declare-fun ewadd (T T) T)                        ; x y
(declare-fun ewmul (T T) T)                        ; x y
(declare-fun smul (T T) T)                         ; x s: s a one-element tensor
(declare-fun relu (T) T)                           ; x
(declare-fun transpose (Int T) T)                  ; perm x
(declare-fun concat (Int T T) T)                   ; axis x y
(declare-fun split0 (Int Int T) T)                 ; axis n x: the first n entries along axis
(declare-fun split1 (Int Int T) T)                 ; axis n x: the entries after the first n
(declare-fun avgpool2d (Int Int Int Int Int T) T)  ; kh kw stride_h stride_w pad x
(declare-fun maxpool2d (Int Int Int Int Int T) T)  ; kh kw stride_h stride_w pad x
(declare-fun enlarge (Int Int T) T)                ; kh kw x
(declare-fun const_imm (Int) T)                    ; n: identity matrix (n,n)
(declare-fun const_iconv (Int Int Int) T)          ; c kh kw: identity kernel (c,c,kh,kw)
(declare-fun const_pool (Int Int Int) T)           ; c kh kw: averaging kernel (c,1,kh,kw)
(declare-fun const_ones1 (Int) T)                  ; d0: all ones
(declare-fun const_ones2 (Int Int) T)              ; d0 d1
(declare-fun const_ones3 (Int Int Int) T)          ; d0 d1 d2
(declare-fun const_ones4 (Int Int Int Int) T)      ; d0 d1 d2 d3

; ---------------------------------------------------------------------------------------------
; elementwise algebra

;; ewadd is commutative
(assert (! (forall ((x T) (y T)) (! (= (ewadd x y) (ewadd y x)) :pattern ((ewadd x y)))) :named ewadd_comm))
;; ewadd is associative
(assert (! (forall ((x T) (y T) (z T)) (! (= (ewadd x (ewadd y z)) (ewadd (ewadd x y) z)) :pattern ((ewadd x (ewadd y z))))) :named ewadd_assoc))
;; ewmul is commutative
(assert (! (forall ((x T) (y T)) (! (= (ewmul x y) (ewmul y x)) :pattern ((ewmul x y)))) :named ewmul_comm))
;; ewmul is associative
(assert (! (forall ((x T) (y T) (z T)) (! (= (ewmul x (ewmul y z)) (ewmul (ewmul x y) z)) :pattern ((ewmul x (ewmul y z))))) :named ewmul_assoc))
;; ewmul distributes over ewadd
(assert (! (forall ((x T) (y T) (z T)) (! (= (ewmul (ewadd x y) z) (ewadd (ewmul x z) (ewmul y z))) :pattern ((ewmul (ewadd x y) z)))) :named ewmul_ewadd))

; ---------------------------------------------------------------------------------------------
; scalar multiplication

;; smul by two scalars is smul by their product
(assert (! (forall ((x T) (y T) (w T)) (! (= (smul (smul x y) w) (smul x (smul y w))) :pattern ((smul (smul x y) w)))) :named smul_assoc))
;; smul distributes over ewadd
(assert (! (forall ((x T) (y T) (w T)) (! (= (smul (ewadd x y) w) (ewadd (smul x w) (smul y w))) :pattern ((smul (ewadd x y) w)) :pattern ((ewadd (smul x w) (smul y w))))) :named smul_ewadd))
;; smul moves into either factor of an ewmul
(assert (! (forall ((x T) (y T) (w T)) (! (= (smul (ewmul x y) w) (ewmul x (smul y w))) :pattern ((smul (ewmul x y) w)) :pattern ((ewmul x (smul y w))))) :named smul_ewmul))
;; smul commutes with transpose
(assert (! (forall ((p Int) (x T) (w T)) (! (= (smul (transpose p x) w) (transpose p (smul x w))) :pattern ((smul (transpose p x) w)) :pattern ((transpose p (smul x w))))) :named smul_transpose))
;; smul of a matmul moves into its second operand
(assert (! (forall ((x T) (y T) (w T)) (! (= (smul (matmul NONE x y) w) (matmul NONE x (smul y w))) :pattern ((smul (matmul NONE x y) w)) :pattern ((matmul NONE x (smul y w))))) :named smul_matmul))
;; smul moves between the operands of a matmul (any activation)
(assert (! (forall ((a Int) (x T) (y T) (w T)) (! (= (matmul a (smul x w) y) (matmul a x (smul y w))) :pattern ((matmul a (smul x w) y)) :pattern ((matmul a x (smul y w))))) :named smul_matmul_swap))
;; smul distributes over concat
(assert (! (forall ((ax Int) (x T) (y T) (w T)) (! (= (smul (concat ax x y) w) (concat ax (smul x w) (smul y w))) :pattern ((smul (concat ax x y) w)) :pattern ((concat ax (smul x w) (smul y w))))) :named smul_concat))
;; smul moves between the input and the kernel of a conv2d (any activation)
(assert (! (forall ((sh Int) (sw Int) (pad Int) (g Int) (a Int) (x T) (y T) (w T)) (! (= (conv2d sh sw pad g a (smul x w) y) (conv2d sh sw pad g a x (smul y w))) :pattern ((conv2d sh sw pad g a (smul x w) y)) :pattern ((conv2d sh sw pad g a x (smul y w))))) :named smul_conv_swap))
;; smul of a conv2d moves into its input
(assert (! (forall ((sh Int) (sw Int) (pad Int) (g Int) (x T) (y T) (w T)) (! (= (smul (conv2d sh sw pad g NONE x y) w) (conv2d sh sw pad g NONE (smul x w) y)) :pattern ((smul (conv2d sh sw pad g NONE x y) w)) :pattern ((conv2d sh sw pad g NONE (smul x w) y)))) :named smul_conv))

; ---------------------------------------------------------------------------------------------
; relu

;; relu after a conv2d is the conv2d's fused relu
(assert (! (forall ((sh Int) (sw Int) (pad Int) (g Int) (x T) (y T)) (! (= (relu (conv2d sh sw pad g NONE x y)) (conv2d sh sw pad g RELU x y)) :pattern ((relu (conv2d sh sw pad g NONE x y))) :pattern ((conv2d sh sw pad g RELU x y)))) :named relu_conv))
;; relu after a matmul is the matmul's fused relu
(assert (! (forall ((x T) (y T)) (! (= (relu (matmul NONE x y)) (matmul RELU x y)) :pattern ((relu (matmul NONE x y))) :pattern ((matmul RELU x y)))) :named relu_matmul))
;; relu distributes over concat
(assert (! (forall ((ax Int) (x T) (y T)) (! (= (relu (concat ax x y)) (concat ax (relu x) (relu y))) :pattern ((relu (concat ax x y))) :pattern ((concat ax (relu x) (relu y))))) :named relu_concat))
;; relu commutes with transpose
(assert (! (forall ((p Int) (x T)) (! (= (relu (transpose p x)) (transpose p (relu x))) :pattern ((relu (transpose p x))) :pattern ((transpose p (relu x))))) :named relu_transpose))

; ---------------------------------------------------------------------------------------------
; conv2d

;; conv2d is linear in its kernel
(assert (! (forall ((sh Int) (sw Int) (pad Int) (g Int) (x T) (y T) (z T)) (! (=> (and (= (dim y 2) (dim z 2)) (= (dim y 3) (dim z 3))) (= (conv2d sh sw pad g NONE x (ewadd y z)) (ewadd (conv2d sh sw pad g NONE x y) (conv2d sh sw pad g NONE x z)))) :pattern ((conv2d sh sw pad g NONE x (ewadd y z))) :pattern ((ewadd (conv2d sh sw pad g NONE x y) (conv2d sh sw pad g NONE x z))))) :named conv_kernel_ewadd))
;; conv2d is linear in its input
(assert (! (forall ((sh Int) (sw Int) (pad Int) (g Int) (x T) (y T) (z T)) (! (=> (and (= (dim x 2) (dim y 2)) (= (dim x 3) (dim y 3))) (= (conv2d sh sw pad g NONE (ewadd x y) z) (ewadd (conv2d sh sw pad g NONE x z) (conv2d sh sw pad g NONE y z)))) :pattern ((conv2d sh sw pad g NONE (ewadd x y) z)) :pattern ((ewadd (conv2d sh sw pad g NONE x z) (conv2d sh sw pad g NONE y z))))) :named conv_input_ewadd))
;; the sum of two conv2d is one conv2d over inputs and kernels concatenated along channels
(assert (! (forall ((sh Int) (sw Int) (pad Int) (x T) (y T) (z T) (w T)) (! (=> (and (= (dim x 1) (dim y 1)) (= (dim x 0) (dim z 0)) (= (dim x 2) (dim z 2)) (= (dim x 3) (dim z 3)) (= (dim y 0) (dim w 0)) (= (dim y 2) (dim w 2)) (= (dim y 3) (dim w 3))) (= (ewadd (conv2d sh sw pad 1 NONE x y) (conv2d sh sw pad 1 NONE z w)) (conv2d sh sw pad 1 NONE (concat 1 x z) (concat 1 y w)))) :pattern ((ewadd (conv2d sh sw pad 1 NONE x y) (conv2d sh sw pad 1 NONE z w))) :pattern ((conv2d sh sw pad 1 NONE (concat 1 x z) (concat 1 y w))))) :named conv_concat_channels))
;; conv2d of inputs concatenated along the batch is the concat of the conv2d
(assert (! (forall ((sh Int) (sw Int) (pad Int) (g Int) (a Int) (x T) (y T) (z T)) (! (=> (and (= (dim x 2) (dim y 2)) (= (dim x 3) (dim y 3))) (= (concat 0 (conv2d sh sw pad g a x z) (conv2d sh sw pad g a y z)) (conv2d sh sw pad g a (concat 0 x y) z))) :pattern ((concat 0 (conv2d sh sw pad g a x z) (conv2d sh sw pad g a y z))) :pattern ((conv2d sh sw pad g a (concat 0 x y) z)))) :named conv_concat_batch))
;; conv2d with kernels concatenated along output channels is the concat of the conv2d
(assert (! (forall ((sh Int) (sw Int) (pad Int) (a Int) (x T) (y T) (z T)) (! (=> (and (= (dim y 2) (dim z 2)) (= (dim y 3) (dim z 3))) (= (concat 1 (conv2d sh sw pad 1 a x y) (conv2d sh sw pad 1 a x z)) (conv2d sh sw pad 1 a x (concat 0 y z)))) :pattern ((concat 1 (conv2d sh sw pad 1 a x y) (conv2d sh sw pad 1 a x z))) :pattern ((conv2d sh sw pad 1 a x (concat 0 y z))))) :named conv_concat_kernels))
;; enlarging a kernel to its own size keeps it
(assert (! (forall ((kh Int) (kw Int) (x T)) (! (=> (and (= (dim x 2) kh) (= (dim x 3) kw)) (= (enlarge kh kw x) x)) :pattern ((enlarge kh kw x)))) :named enlarge_same))
;; a conv2d with kernels one row high acts on rows separately: it distributes over a concat of rows
(assert (! (forall ((sw Int) (pad Int) (g Int) (a Int) (x T) (y T) (w T)) (! (=> (and (= (dim w 2) 1) (= (dim x 3) (dim y 3))) (= (conv2d 1 sw pad g a (concat 2 x y) w) (concat 2 (conv2d 1 sw pad g a x w) (conv2d 1 sw pad g a y w)))) :pattern ((conv2d 1 sw pad g a (concat 2 x y) w)) :pattern ((concat 2 (conv2d 1 sw pad g a x w) (conv2d 1 sw pad g a y w))))) :named conv_concat_rows))
;; a conv2d with kernels one column wide acts on columns separately: it distributes over a concat of columns
(assert (! (forall ((sh Int) (pad Int) (g Int) (a Int) (x T) (y T) (w T)) (! (=> (and (= (dim w 3) 1) (= (dim x 2) (dim y 2))) (= (conv2d sh 1 pad g a (concat 3 x y) w) (concat 3 (conv2d sh 1 pad g a x w) (conv2d sh 1 pad g a y w)))) :pattern ((conv2d sh 1 pad g a (concat 3 x y) w)) :pattern ((concat 3 (conv2d sh 1 pad g a x w) (conv2d sh 1 pad g a y w))))) :named conv_concat_cols))
;; a stride-1 'same' conv2d with a kernel zero-padded (enlarge) equals the conv2d with the kernel
(assert (! (forall ((g Int) (a Int) (kh Int) (kw Int) (x T) (y T)) (! (= (conv2d 1 1 SAME g a x (enlarge kh kw y)) (conv2d 1 1 SAME g a x y)) :pattern ((conv2d 1 1 SAME g a x (enlarge kh kw y))))) :named conv_enlarge))
;; a stride-1 'same' conv2d with the identity kernel of x's channel count is the identity
(assert (! (forall ((c Int) (kh Int) (kw Int) (x T)) (! (=> (= (dim x 1) c) (= (conv2d 1 1 SAME 1 NONE x (const_iconv c kh kw)) x)) :pattern ((conv2d 1 1 SAME 1 NONE x (const_iconv c kh kw))))) :named conv_iconv))
;; a 1x1 conv2d (per-pixel channel mixing) commutes with avgpool2d
(assert (! (forall ((kh Int) (kw Int) (sh Int) (sw Int) (pad Int) (cpad Int) (x T) (w T)) (! (=> (and (= (dim w 2) 1) (= (dim w 3) 1)) (= (conv2d 1 1 cpad 1 NONE (avgpool2d kh kw sh sw pad x) w) (avgpool2d kh kw sh sw pad (conv2d 1 1 cpad 1 NONE x w)))) :pattern ((conv2d 1 1 cpad 1 NONE (avgpool2d kh kw sh sw pad x) w)) :pattern ((avgpool2d kh kw sh sw pad (conv2d 1 1 cpad 1 NONE x w))))) :named conv1x1_avgpool))
;; a depthwise conv2d with the averaging kernel of x's channel count is avgpool2d (padding counted)
(assert (! (forall ((sh Int) (sw Int) (pad Int) (c Int) (kh Int) (kw Int) (x T)) (! (=> (= (dim x 1) c) (= (conv2d sh sw pad c NONE x (const_pool c kh kw)) (avgpool2d kh kw sh sw pad x))) :pattern ((conv2d sh sw pad c NONE x (const_pool c kh kw))))) :named conv_pool))
;; avgpool2d is a depthwise conv2d with the averaging kernel
(assert (! (forall ((sh Int) (sw Int) (pad Int) (kh Int) (kw Int) (x T)) (! (= (avgpool2d kh kw sh sw pad x) (conv2d sh sw pad (dim x 1) NONE x (const_pool (dim x 1) kh kw))) :pattern ((avgpool2d kh kw sh sw pad x)))) :named pool_conv))

; ---------------------------------------------------------------------------------------------
; pooling

;; avgpool2d of inputs concatenated along batch or channels is the concat of the avgpool2d
(assert (! (forall ((ax Int) (kh Int) (kw Int) (sh Int) (sw Int) (pad Int) (x T) (y T)) (! (=> (and (or (= ax 0) (= ax 1)) (= (dim x 2) (dim y 2)) (= (dim x 3) (dim y 3))) (= (concat ax (avgpool2d kh kw sh sw pad x) (avgpool2d kh kw sh sw pad y)) (avgpool2d kh kw sh sw pad (concat ax x y)))) :pattern ((concat ax (avgpool2d kh kw sh sw pad x) (avgpool2d kh kw sh sw pad y))) :pattern ((avgpool2d kh kw sh sw pad (concat ax x y))))) :named avgpool_concat))
;; maxpool2d of inputs concatenated along batch or channels is the concat of the maxpool2d
(assert (! (forall ((ax Int) (kh Int) (kw Int) (sh Int) (sw Int) (pad Int) (x T) (y T)) (! (=> (and (or (= ax 0) (= ax 1)) (= (dim x 2) (dim y 2)) (= (dim x 3) (dim y 3))) (= (concat ax (maxpool2d kh kw sh sw pad x) (maxpool2d kh kw sh sw pad y)) (maxpool2d kh kw sh sw pad (concat ax x y)))) :pattern ((concat ax (maxpool2d kh kw sh sw pad x) (maxpool2d kh kw sh sw pad y))) :pattern ((maxpool2d kh kw sh sw pad (concat ax x y))))) :named maxpool_concat))

; ---------------------------------------------------------------------------------------------
; matmul

;; matmul is associative (the outer activation stays outside)
(assert (! (forall ((a Int) (x T) (y T) (z T)) (! (= (matmul a x (matmul NONE y z)) (matmul a (matmul NONE x y) z)) :pattern ((matmul a x (matmul NONE y z))) :pattern ((matmul a (matmul NONE x y) z)))) :named matmul_assoc))
;; matmul distributes over ewadd in its second operand
(assert (! (forall ((x T) (y T) (z T)) (! (= (matmul NONE x (ewadd y z)) (ewadd (matmul NONE x y) (matmul NONE x z))) :pattern ((matmul NONE x (ewadd y z))) :pattern ((ewadd (matmul NONE x y) (matmul NONE x z))))) :named matmul_ewadd_r))
;; matmul distributes over ewadd in its first operand
(assert (! (forall ((x T) (y T) (z T)) (! (= (matmul NONE (ewadd x y) z) (ewadd (matmul NONE x z) (matmul NONE y z))) :pattern ((matmul NONE (ewadd x y) z)) :pattern ((ewadd (matmul NONE x z) (matmul NONE y z))))) :named matmul_ewadd_l))
;; matmul with a second operand concatenated along columns is the concat of the matmuls
(assert (! (forall ((a Int) (x T) (y T) (z T)) (! (= (matmul a x (concat 1 y z)) (concat 1 (matmul a x y) (matmul a x z))) :pattern ((matmul a x (concat 1 y z))) :pattern ((concat 1 (matmul a x y) (matmul a x z))))) :named matmul_concat_cols))
;; matmul with a first operand concatenated along rows is the concat of the matmuls
(assert (! (forall ((a Int) (x T) (y T) (z T)) (! (= (matmul a (concat 0 x y) z) (concat 0 (matmul a x z) (matmul a y z))) :pattern ((matmul a (concat 0 x y) z)) :pattern ((concat 0 (matmul a x z) (matmul a y z))))) :named matmul_concat_rows))
;; matmul of operands concatenated along the inner dimension is the sum of the matmuls
(assert (! (forall ((x T) (y T) (z T) (w T)) (! (=> (and (= (dim x 1) (dim y 0)) (= (dim x 0) (dim z 0)) (= (dim y 1) (dim w 1))) (= (matmul NONE (concat 1 x z) (concat 0 y w)) (ewadd (matmul NONE x y) (matmul NONE z w)))) :pattern ((matmul NONE (concat 1 x z) (concat 0 y w))) :pattern ((ewadd (matmul NONE x y) (matmul NONE z w))))) :named matmul_concat_inner))
;; the identity matrix of x's column count is a right unit of matmul
(assert (! (forall ((n Int) (x T)) (! (=> (= (dim x 1) n) (= (matmul NONE x (const_imm n)) x)) :pattern ((matmul NONE x (const_imm n))))) :named matmul_imm_r))
;; the identity matrix of x's row count is a left unit of matmul
(assert (! (forall ((n Int) (x T)) (! (=> (= (dim x 0) n) (= (matmul NONE (const_imm n) x) x)) :pattern ((matmul NONE (const_imm n) x)))) :named matmul_imm_l))

; ---------------------------------------------------------------------------------------------
; transpose (of a matrix)

;; transposing twice is the identity
(assert (! (forall ((x T)) (! (= (transpose SWAP (transpose SWAP x)) x) :pattern ((transpose SWAP (transpose SWAP x))))) :named transpose_twice))
;; the transpose of a matmul is the matmul of the transposes, swapped
(assert (! (forall ((a Int) (x T) (y T)) (! (= (transpose SWAP (matmul a x y)) (matmul a (transpose SWAP y) (transpose SWAP x))) :pattern ((transpose SWAP (matmul a x y))) :pattern ((matmul a (transpose SWAP y) (transpose SWAP x))))) :named transpose_matmul))
;; the transpose of a row concat is the column concat of the transposes
(assert (! (forall ((x T) (y T)) (! (= (transpose SWAP (concat 0 x y)) (concat 1 (transpose SWAP x) (transpose SWAP y))) :pattern ((transpose SWAP (concat 0 x y))) :pattern ((concat 1 (transpose SWAP x) (transpose SWAP y))))) :named transpose_concat_rows))
;; the transpose of a column concat is the row concat of the transposes
(assert (! (forall ((x T) (y T)) (! (= (transpose SWAP (concat 1 x y)) (concat 0 (transpose SWAP x) (transpose SWAP y))) :pattern ((transpose SWAP (concat 1 x y))) :pattern ((concat 0 (transpose SWAP x) (transpose SWAP y))))) :named transpose_concat_cols))
;; transpose commutes with ewadd
(assert (! (forall ((p Int) (x T) (y T)) (! (= (transpose p (ewadd x y)) (ewadd (transpose p x) (transpose p y))) :pattern ((transpose p (ewadd x y))) :pattern ((ewadd (transpose p x) (transpose p y))))) :named transpose_ewadd))
;; transpose commutes with ewmul
(assert (! (forall ((p Int) (x T) (y T)) (! (= (transpose p (ewmul x y)) (ewmul (transpose p x) (transpose p y))) :pattern ((transpose p (ewmul x y))) :pattern ((ewmul (transpose p x) (transpose p y))))) :named transpose_ewmul))
;; the identity matrix is symmetric
(assert (! (forall ((n Int)) (! (= (transpose SWAP (const_imm n)) (const_imm n)) :pattern ((transpose SWAP (const_imm n))))) :named transpose_imm))

; ---------------------------------------------------------------------------------------------
; concat and split

;; concat along one axis is associative
(assert (! (forall ((ax Int) (x T) (y T) (z T)) (! (= (concat ax x (concat ax y z)) (concat ax (concat ax x y) z)) :pattern ((concat ax x (concat ax y z))) :pattern ((concat ax (concat ax x y) z)))) :named concat_assoc))
;; concats along two different axes commute when the blocks line up
(assert (! (forall ((a Int) (b Int) (x T) (y T) (z T) (w T)) (! (=> (and (distinct a b) (= (dim x a) (dim y a)) (= (dim x b) (dim z b))) (= (concat a (concat b x y) (concat b z w)) (concat b (concat a x z) (concat a y w)))) :pattern ((concat a (concat b x y) (concat b z w))))) :named concat_grid))
;; ewadd of concats is the concat of ewadds when the blocks line up
(assert (! (forall ((ax Int) (x T) (y T) (z T) (w T)) (! (=> (and (= (dim x ax) (dim y ax)) (= (dim z ax) (dim w ax))) (= (concat ax (ewadd x y) (ewadd z w)) (ewadd (concat ax x z) (concat ax y w)))) :pattern ((concat ax (ewadd x y) (ewadd z w))) :pattern ((ewadd (concat ax x z) (concat ax y w))))) :named concat_ewadd))
;; ewmul of concats is the concat of ewmuls when the blocks line up
(assert (! (forall ((ax Int) (x T) (y T) (z T) (w T)) (! (=> (and (= (dim x ax) (dim y ax)) (= (dim z ax) (dim w ax))) (= (concat ax (ewmul x y) (ewmul z w)) (ewmul (concat ax x z) (concat ax y w)))) :pattern ((concat ax (ewmul x y) (ewmul z w))) :pattern ((ewmul (concat ax x z) (concat ax y w))))) :named concat_ewmul))
;; the first part of a concat cut at its seam is the first input
(assert (! (forall ((ax Int) (n Int) (x T) (y T)) (! (=> (= n (dim x ax)) (= (split0 ax n (concat ax x y)) x)) :pattern ((split0 ax n (concat ax x y))))) :named split0_concat))
;; the second part of a concat cut at its seam is the second input (the inputs agree off the axis)
(assert (! (forall ((ax Int) (n Int) (x T) (y T)) (! (=> (and (= n (dim x ax)) (or (= ax 0) (= (dim x 0) (dim y 0))) (or (= ax 1) (= (dim x 1) (dim y 1))) (or (= ax 2) (= (dim x 2) (dim y 2))) (or (= ax 3) (= (dim x 3) (dim y 3)))) (= (split1 ax n (concat ax x y)) y)) :pattern ((split1 ax n (concat ax x y))))) :named split1_concat))
;; concatenating the two parts of a split gives the tensor back
(assert (! (forall ((ax Int) (n Int) (x T)) (! (= (concat ax (split0 ax n x) (split1 ax n x)) x) :pattern ((split0 ax n x)))) :named concat_split))

; ---------------------------------------------------------------------------------------------
; split: the parts of a split commute with ops that act on each slice alike

;; relu of a part is the part of the relu (part 0)
(assert (! (forall ((ax Int) (n Int) (x T)) (! (= (relu (split0 ax n x)) (split0 ax n (relu x))) :pattern ((relu (split0 ax n x))))) :named split_relu0))
;; relu of a part is the part of the relu (part 1)
(assert (! (forall ((ax Int) (n Int) (x T)) (! (= (relu (split1 ax n x)) (split1 ax n (relu x))) :pattern ((relu (split1 ax n x))))) :named split_relu1))
;; smul of a part is the part of the smul (part 0)
(assert (! (forall ((ax Int) (n Int) (x T) (w T)) (! (= (smul (split0 ax n x) w) (split0 ax n (smul x w))) :pattern ((smul (split0 ax n x) w)))) :named split_smul0))
;; smul of a part is the part of the smul (part 1)
(assert (! (forall ((ax Int) (n Int) (x T) (w T)) (! (= (smul (split1 ax n x) w) (split1 ax n (smul x w))) :pattern ((smul (split1 ax n x) w)))) :named split_smul1))
;; ewadd of parts is the part of the ewadd (part 0)
(assert (! (forall ((ax Int) (n Int) (x T) (y T)) (! (=> (= (dim x ax) (dim y ax)) (= (ewadd (split0 ax n x) (split0 ax n y)) (split0 ax n (ewadd x y)))) :pattern ((ewadd (split0 ax n x) (split0 ax n y))))) :named split_ewadd0))
;; ewadd of parts is the part of the ewadd (part 1)
(assert (! (forall ((ax Int) (n Int) (x T) (y T)) (! (=> (= (dim x ax) (dim y ax)) (= (ewadd (split1 ax n x) (split1 ax n y)) (split1 ax n (ewadd x y)))) :pattern ((ewadd (split1 ax n x) (split1 ax n y))))) :named split_ewadd1))
;; ewmul of parts is the part of the ewmul (part 0)
(assert (! (forall ((ax Int) (n Int) (x T) (y T)) (! (=> (= (dim x ax) (dim y ax)) (= (ewmul (split0 ax n x) (split0 ax n y)) (split0 ax n (ewmul x y)))) :pattern ((ewmul (split0 ax n x) (split0 ax n y))))) :named split_ewmul0))
;; ewmul of parts is the part of the ewmul (part 1)
(assert (! (forall ((ax Int) (n Int) (x T) (y T)) (! (=> (= (dim x ax) (dim y ax)) (= (ewmul (split1 ax n x) (split1 ax n y)) (split1 ax n (ewmul x y)))) :pattern ((ewmul (split1 ax n x) (split1 ax n y))))) :named split_ewmul1))
;; the transpose of a row part is the column part of the transpose (part 0)
(assert (! (forall ((n Int) (x T)) (! (= (transpose SWAP (split0 0 n x)) (split0 1 n (transpose SWAP x))) :pattern ((transpose SWAP (split0 0 n x))))) :named split_transpose_rows0))
;; the transpose of a row part is the column part of the transpose (part 1)
(assert (! (forall ((n Int) (x T)) (! (= (transpose SWAP (split1 0 n x)) (split1 1 n (transpose SWAP x))) :pattern ((transpose SWAP (split1 0 n x))))) :named split_transpose_rows1))
;; the transpose of a column part is the row part of the transpose (part 0)
(assert (! (forall ((n Int) (x T)) (! (= (transpose SWAP (split0 1 n x)) (split0 0 n (transpose SWAP x))) :pattern ((transpose SWAP (split0 1 n x))))) :named split_transpose_cols0))
;; the transpose of a column part is the row part of the transpose (part 1)
(assert (! (forall ((n Int) (x T)) (! (= (transpose SWAP (split1 1 n x)) (split1 0 n (transpose SWAP x))) :pattern ((transpose SWAP (split1 1 n x))))) :named split_transpose_cols1))
;; matmul of a row part is the row part of the matmul (part 0)
(assert (! (forall ((a Int) (n Int) (x T) (y T)) (! (= (matmul a (split0 0 n x) y) (split0 0 n (matmul a x y))) :pattern ((matmul a (split0 0 n x) y)))) :named split_matmul_rows0))
;; matmul of a row part is the row part of the matmul (part 1)
(assert (! (forall ((a Int) (n Int) (x T) (y T)) (! (= (matmul a (split1 0 n x) y) (split1 0 n (matmul a x y))) :pattern ((matmul a (split1 0 n x) y)))) :named split_matmul_rows1))
;; matmul with a column part is the column part of the matmul (part 0)
(assert (! (forall ((a Int) (n Int) (x T) (y T)) (! (= (matmul a x (split0 1 n y)) (split0 1 n (matmul a x y))) :pattern ((matmul a x (split0 1 n y))))) :named split_matmul_cols0))
;; matmul with a column part is the column part of the matmul (part 1)
(assert (! (forall ((a Int) (n Int) (x T) (y T)) (! (= (matmul a x (split1 1 n y)) (split1 1 n (matmul a x y))) :pattern ((matmul a x (split1 1 n y))))) :named split_matmul_cols1))
;; conv2d of a batch part is the batch part of the conv2d (part 0)
(assert (! (forall ((sh Int) (sw Int) (pad Int) (g Int) (a Int) (n Int) (x T) (w T)) (! (= (conv2d sh sw pad g a (split0 0 n x) w) (split0 0 n (conv2d sh sw pad g a x w))) :pattern ((conv2d sh sw pad g a (split0 0 n x) w)))) :named split_conv_batch0))
;; conv2d of a batch part is the batch part of the conv2d (part 1)
(assert (! (forall ((sh Int) (sw Int) (pad Int) (g Int) (a Int) (n Int) (x T) (w T)) (! (= (conv2d sh sw pad g a (split1 0 n x) w) (split1 0 n (conv2d sh sw pad g a x w))) :pattern ((conv2d sh sw pad g a (split1 0 n x) w)))) :named split_conv_batch1))
;; conv2d with a part of the filters is the channel part of the conv2d (part 0)
(assert (! (forall ((sh Int) (sw Int) (pad Int) (a Int) (n Int) (x T) (w T)) (! (= (conv2d sh sw pad 1 a x (split0 0 n w)) (split0 1 n (conv2d sh sw pad 1 a x w))) :pattern ((conv2d sh sw pad 1 a x (split0 0 n w))))) :named split_conv_kernels0))
;; conv2d with a part of the filters is the channel part of the conv2d (part 1)
(assert (! (forall ((sh Int) (sw Int) (pad Int) (a Int) (n Int) (x T) (w T)) (! (= (conv2d sh sw pad 1 a x (split1 0 n w)) (split1 1 n (conv2d sh sw pad 1 a x w))) :pattern ((conv2d sh sw pad 1 a x (split1 0 n w))))) :named split_conv_kernels1))
;; avgpool2d of a batch or channel part is the part of the avgpool2d (part 0)
(assert (! (forall ((ax Int) (kh Int) (kw Int) (sh Int) (sw Int) (pad Int) (n Int) (x T)) (! (=> (or (= ax 0) (= ax 1)) (= (avgpool2d kh kw sh sw pad (split0 ax n x)) (split0 ax n (avgpool2d kh kw sh sw pad x)))) :pattern ((avgpool2d kh kw sh sw pad (split0 ax n x))))) :named split_avgpool0))
;; avgpool2d of a batch or channel part is the part of the avgpool2d (part 1)
(assert (! (forall ((ax Int) (kh Int) (kw Int) (sh Int) (sw Int) (pad Int) (n Int) (x T)) (! (=> (or (= ax 0) (= ax 1)) (= (avgpool2d kh kw sh sw pad (split1 ax n x)) (split1 ax n (avgpool2d kh kw sh sw pad x)))) :pattern ((avgpool2d kh kw sh sw pad (split1 ax n x))))) :named split_avgpool1))
;; maxpool2d of a batch or channel part is the part of the maxpool2d (part 0)
(assert (! (forall ((ax Int) (kh Int) (kw Int) (sh Int) (sw Int) (pad Int) (n Int) (x T)) (! (=> (or (= ax 0) (= ax 1)) (= (maxpool2d kh kw sh sw pad (split0 ax n x)) (split0 ax n (maxpool2d kh kw sh sw pad x)))) :pattern ((maxpool2d kh kw sh sw pad (split0 ax n x))))) :named split_maxpool0))
;; maxpool2d of a batch or channel part is the part of the maxpool2d (part 1)
(assert (! (forall ((ax Int) (kh Int) (kw Int) (sh Int) (sw Int) (pad Int) (n Int) (x T)) (! (=> (or (= ax 0) (= ax 1)) (= (maxpool2d kh kw sh sw pad (split1 ax n x)) (split1 ax n (maxpool2d kh kw sh sw pad x)))) :pattern ((maxpool2d kh kw sh sw pad (split1 ax n x))))) :named split_maxpool1))
;; enlarge of a filter or channel part is the part of the enlarged kernel (part 0)
(assert (! (forall ((ax Int) (kh Int) (kw Int) (n Int) (x T)) (! (=> (or (= ax 0) (= ax 1)) (= (enlarge kh kw (split0 ax n x)) (split0 ax n (enlarge kh kw x)))) :pattern ((enlarge kh kw (split0 ax n x))))) :named split_enlarge0))
;; enlarge of a filter or channel part is the part of the enlarged kernel (part 1)
(assert (! (forall ((ax Int) (kh Int) (kw Int) (n Int) (x T)) (! (=> (or (= ax 0) (= ax 1)) (= (enlarge kh kw (split1 ax n x)) (split1 ax n (enlarge kh kw x)))) :pattern ((enlarge kh kw (split1 ax n x))))) :named split_enlarge1))

;; cuts along two different axes commute (split0 of split0)
(assert (! (forall ((a Int) (b Int) (n Int) (m Int) (x T)) (! (=> (distinct a b) (= (split0 a n (split0 b m x)) (split0 b m (split0 a n x)))) :pattern ((split0 a n (split0 b m x))))) :named split0_split0))
;; cuts along two different axes commute (split0 of split1)
(assert (! (forall ((a Int) (b Int) (n Int) (m Int) (x T)) (! (=> (distinct a b) (= (split0 a n (split1 b m x)) (split1 b m (split0 a n x)))) :pattern ((split0 a n (split1 b m x))))) :named split0_split1))
;; cuts along two different axes commute (split1 of split0)
(assert (! (forall ((a Int) (b Int) (n Int) (m Int) (x T)) (! (=> (distinct a b) (= (split1 a n (split0 b m x)) (split0 b m (split1 a n x)))) :pattern ((split1 a n (split0 b m x))))) :named split1_split0))
;; cuts along two different axes commute (split1 of split1)
(assert (! (forall ((a Int) (b Int) (n Int) (m Int) (x T)) (! (=> (distinct a b) (= (split1 a n (split1 b m x)) (split1 b m (split1 a n x)))) :pattern ((split1 a n (split1 b m x))))) :named split1_split1))
;; a cut across a concat along another axis is the concat of the cuts (split0)
(assert (! (forall ((a Int) (b Int) (n Int) (x T) (y T)) (! (=> (distinct a b) (= (split0 a n (concat b x y)) (concat b (split0 a n x) (split0 a n y)))) :pattern ((split0 a n (concat b x y))))) :named split0_concat_other))
;; a cut across a concat along another axis is the concat of the cuts (split1)
(assert (! (forall ((a Int) (b Int) (n Int) (x T) (y T)) (! (=> (distinct a b) (= (split1 a n (concat b x y)) (concat b (split1 a n x) (split1 a n y)))) :pattern ((split1 a n (concat b x y))))) :named split1_concat_other))

; ---------------------------------------------------------------------------------------------
; enlarge: zero padding a kernel commutes with what maps zero to zero cell by cell

;; enlarge distributes over ewadd
(assert (! (forall ((kh Int) (kw Int) (x T) (y T)) (! (=> (and (= (dim x 2) (dim y 2)) (= (dim x 3) (dim y 3))) (= (enlarge kh kw (ewadd x y)) (ewadd (enlarge kh kw x) (enlarge kh kw y)))) :pattern ((enlarge kh kw (ewadd x y))) :pattern ((ewadd (enlarge kh kw x) (enlarge kh kw y))))) :named enlarge_ewadd))
;; enlarge distributes over ewmul
(assert (! (forall ((kh Int) (kw Int) (x T) (y T)) (! (=> (and (= (dim x 2) (dim y 2)) (= (dim x 3) (dim y 3))) (= (enlarge kh kw (ewmul x y)) (ewmul (enlarge kh kw x) (enlarge kh kw y)))) :pattern ((enlarge kh kw (ewmul x y))) :pattern ((ewmul (enlarge kh kw x) (enlarge kh kw y))))) :named enlarge_ewmul))
;; enlarge commutes with smul
(assert (! (forall ((kh Int) (kw Int) (x T) (w T)) (! (= (enlarge kh kw (smul x w)) (smul (enlarge kh kw x) w)) :pattern ((enlarge kh kw (smul x w))) :pattern ((smul (enlarge kh kw x) w)))) :named enlarge_smul))
;; enlarge commutes with relu
(assert (! (forall ((kh Int) (kw Int) (x T)) (! (= (enlarge kh kw (relu x)) (relu (enlarge kh kw x))) :pattern ((enlarge kh kw (relu x))) :pattern ((relu (enlarge kh kw x))))) :named enlarge_relu))
;; enlarge distributes over a concat of filters or channels
(assert (! (forall ((ax Int) (kh Int) (kw Int) (x T) (y T)) (! (=> (and (or (= ax 0) (= ax 1)) (= (dim x 2) (dim y 2)) (= (dim x 3) (dim y 3))) (= (enlarge kh kw (concat ax x y)) (concat ax (enlarge kh kw x) (enlarge kh kw y)))) :pattern ((enlarge kh kw (concat ax x y))) :pattern ((concat ax (enlarge kh kw x) (enlarge kh kw y))))) :named enlarge_concat))
;; an enlarged identity kernel is the larger identity kernel
(assert (! (forall ((c Int) (h Int) (w Int) (kh Int) (kw Int)) (! (= (enlarge kh kw (const_iconv c h w)) (const_iconv c kh kw)) :pattern ((enlarge kh kw (const_iconv c h w))))) :named enlarge_iconv))

; ---------------------------------------------------------------------------------------------
; constants

;; relu keeps the identity matrix (its entries are 0 and 1)
(assert (! (forall ((n Int)) (! (= (relu (const_imm n)) (const_imm n)) :pattern ((relu (const_imm n))))) :named relu_imm))
;; relu keeps the identity kernel
(assert (! (forall ((c Int) (kh Int) (kw Int)) (! (= (relu (const_iconv c kh kw)) (const_iconv c kh kw)) :pattern ((relu (const_iconv c kh kw))))) :named relu_iconv))
;; relu keeps ones (matrices)
(assert (! (forall ((d0 Int) (d1 Int)) (! (= (relu (const_ones2 d0 d1)) (const_ones2 d0 d1)) :pattern ((relu (const_ones2 d0 d1))))) :named relu_ones2))
;; relu keeps ones (rank-4 tensors)
(assert (! (forall ((d0 Int) (d1 Int) (d2 Int) (d3 Int)) (! (= (relu (const_ones4 d0 d1 d2 d3)) (const_ones4 d0 d1 d2 d3)) :pattern ((relu (const_ones4 d0 d1 d2 d3))))) :named relu_ones4))
;; relu of ones times a scalar is ones times the relu of the scalar (matrices)
(assert (! (forall ((d0 Int) (d1 Int) (s T)) (! (= (relu (smul (const_ones2 d0 d1) s)) (smul (const_ones2 d0 d1) (relu s))) :pattern ((relu (smul (const_ones2 d0 d1) s))) :pattern ((smul (const_ones2 d0 d1) (relu s))))) :named relu_smul_ones2))
;; relu of ones times a scalar is ones times the relu of the scalar (rank-4 tensors)
(assert (! (forall ((d0 Int) (d1 Int) (d2 Int) (d3 Int) (s T)) (! (= (relu (smul (const_ones4 d0 d1 d2 d3) s)) (smul (const_ones4 d0 d1 d2 d3) (relu s))) :pattern ((relu (smul (const_ones4 d0 d1 d2 d3) s))) :pattern ((smul (const_ones4 d0 d1 d2 d3) (relu s))))) :named relu_smul_ones4))
;; the identity matrix times itself cell by cell is itself (its entries are 0 and 1)
(assert (! (forall ((n Int)) (! (= (ewmul (const_imm n) (const_imm n)) (const_imm n)) :pattern ((ewmul (const_imm n) (const_imm n))))) :named ewmul_imm_self))
;; the identity kernel times itself cell by cell is itself
(assert (! (forall ((c Int) (kh Int) (kw Int)) (! (= (ewmul (const_iconv c kh kw) (const_iconv c kh kw)) (const_iconv c kh kw)) :pattern ((ewmul (const_iconv c kh kw) (const_iconv c kh kw))))) :named ewmul_iconv_self))
;; the transpose of ones is ones
(assert (! (forall ((d0 Int) (d1 Int)) (! (= (transpose SWAP (const_ones2 d0 d1)) (const_ones2 d1 d0)) :pattern ((transpose SWAP (const_ones2 d0 d1))))) :named transpose_ones2))
;; ewmul by ones of x's shape is the identity (matrices)
(assert (! (forall ((d0 Int) (d1 Int) (x T)) (! (=> (and (= (dim x 0) d0) (= (dim x 1) d1)) (= (ewmul x (const_ones2 d0 d1)) x)) :pattern ((ewmul x (const_ones2 d0 d1))))) :named ewmul_ones2))
;; ewmul by ones of x's shape is the identity (rank-4 tensors)
(assert (! (forall ((d0 Int) (d1 Int) (d2 Int) (d3 Int) (x T)) (! (=> (and (= (dim x 0) d0) (= (dim x 1) d1) (= (dim x 2) d2) (= (dim x 3) d3)) (= (ewmul x (const_ones4 d0 d1 d2 d3)) x)) :pattern ((ewmul x (const_ones4 d0 d1 d2 d3))))) :named ewmul_ones4))

; ---------------------------------------------------------------------------------------------
; shapes: the size of each dimension of an op's result (for the side conditions above), dims 0..3
; for any arguments; past the result's rank, 1

;; ewadd keeps its operands' shape (-1 where they differ, so that it commutes on any operands)
(assert (! (forall ((x T) (y T) (i Int)) (! (= (dim (ewadd x y) i) (ite (= (dim x i) (dim y i)) (dim x i) (- 1))) :pattern ((dim (ewadd x y) i)))) :named dim_ewadd))
;; ewmul keeps its operands' shape (-1 where they differ, so that it commutes on any operands)
(assert (! (forall ((x T) (y T) (i Int)) (! (= (dim (ewmul x y) i) (ite (= (dim x i) (dim y i)) (dim x i) (- 1))) :pattern ((dim (ewmul x y) i)))) :named dim_ewmul))
;; smul keeps its first operand's shape
(assert (! (forall ((x T) (s T) (i Int)) (! (= (dim (smul x s) i) (dim x i)) :pattern ((dim (smul x s) i)))) :named dim_smul))
;; relu keeps its operand's shape
(assert (! (forall ((x T) (i Int)) (! (= (dim (relu x) i) (dim x i)) :pattern ((dim (relu x) i)))) :named dim_relu))
;; matmul (m,k) x (k,n) is (m,n)
(assert (! (forall ((a Int) (x T) (y T) (i Int)) (! (= (dim (matmul a x y) i) (ite (= i 0) (dim x 0) (ite (= i 1) (dim y 1) 1))) :pattern ((dim (matmul a x y) i)))) :named dim_matmul))
;; a transposed matrix swaps its dimensions
(assert (! (forall ((x T) (i Int)) (! (= (dim (transpose SWAP x) i) (ite (= i 0) (dim x 1) (ite (= i 1) (dim x 0) (dim x i)))) :pattern ((dim (transpose SWAP x) i)))) :named dim_transpose))
;; concat adds the sizes along its axis
(assert (! (forall ((ax Int) (x T) (y T) (i Int)) (! (= (dim (concat ax x y) i) (ite (= i ax) (+ (dim x i) (dim y i)) (dim x i))) :pattern ((dim (concat ax x y) i)))) :named dim_concat))
;; split0 keeps n entries along its axis
(assert (! (forall ((ax Int) (n Int) (x T) (i Int)) (! (= (dim (split0 ax n x) i) (ite (= i ax) n (dim x i))) :pattern ((dim (split0 ax n x) i)))) :named dim_split0))
;; split1 keeps the entries after the first n along its axis
(assert (! (forall ((ax Int) (n Int) (x T) (i Int)) (! (= (dim (split1 ax n x) i) (ite (= i ax) (- (dim x i) n) (dim x i))) :pattern ((dim (split1 ax n x) i)))) :named dim_split1))
;; conv2d: (N,C,H,W) with (F,C/g,KH,KW) is (N,F,H',W')
(assert (! (forall ((sh Int) (sw Int) (pad Int) (g Int) (a Int) (x T) (w T) (i Int)) (! (= (dim (conv2d sh sw pad g a x w) i) (ite (= i 0) (dim x 0) (ite (= i 1) (dim w 0) (ite (= i 2) (ite (= pad SAME) (div (+ (dim x 2) sh -1) sh) (+ (div (- (dim x 2) (dim w 2)) sh) 1)) (ite (= pad SAME) (div (+ (dim x 3) sw -1) sw) (+ (div (- (dim x 3) (dim w 3)) sw) 1)))))) :pattern ((dim (conv2d sh sw pad g a x w) i)))) :named dim_conv2d))
;; avgpool2d: (N,C,H,W) is (N,C,H',W')
(assert (! (forall ((kh Int) (kw Int) (sh Int) (sw Int) (pad Int) (x T) (i Int)) (! (= (dim (avgpool2d kh kw sh sw pad x) i) (ite (< i 2) (dim x i) (ite (= i 2) (ite (= pad SAME) (div (+ (dim x 2) sh -1) sh) (+ (div (- (dim x 2) kh) sh) 1)) (ite (= pad SAME) (div (+ (dim x 3) sw -1) sw) (+ (div (- (dim x 3) kw) sw) 1))))) :pattern ((dim (avgpool2d kh kw sh sw pad x) i)))) :named dim_avgpool2d))
;; maxpool2d: (N,C,H,W) is (N,C,H',W')
(assert (! (forall ((kh Int) (kw Int) (sh Int) (sw Int) (pad Int) (x T) (i Int)) (! (= (dim (maxpool2d kh kw sh sw pad x) i) (ite (< i 2) (dim x i) (ite (= i 2) (ite (= pad SAME) (div (+ (dim x 2) sh -1) sh) (+ (div (- (dim x 2) kh) sh) 1)) (ite (= pad SAME) (div (+ (dim x 3) sw -1) sw) (+ (div (- (dim x 3) kw) sw) 1))))) :pattern ((dim (maxpool2d kh kw sh sw pad x) i)))) :named dim_maxpool2d))
;; enlarge: (F,C,kh',kw') is (F,C,kh,kw)
(assert (! (forall ((kh Int) (kw Int) (x T) (i Int)) (! (= (dim (enlarge kh kw x) i) (ite (= i 2) kh (ite (= i 3) kw (dim x i)))) :pattern ((dim (enlarge kh kw x) i)))) :named dim_enlarge))
;; const_imm n is (n,n)
(assert (! (forall ((n Int) (i Int)) (! (= (dim (const_imm n) i) (ite (< i 2) n 1)) :pattern ((dim (const_imm n) i)))) :named dim_const_imm))
;; const_iconv c kh kw is (c,c,kh,kw)
(assert (! (forall ((c Int) (kh Int) (kw Int) (i Int)) (! (= (dim (const_iconv c kh kw) i) (ite (< i 2) c (ite (= i 2) kh kw))) :pattern ((dim (const_iconv c kh kw) i)))) :named dim_const_iconv))
;; const_pool c kh kw is (c,1,kh,kw)
(assert (! (forall ((c Int) (kh Int) (kw Int) (i Int)) (! (= (dim (const_pool c kh kw) i) (ite (= i 0) c (ite (= i 1) 1 (ite (= i 2) kh kw)))) :pattern ((dim (const_pool c kh kw) i)))) :named dim_const_pool))
;; const_ones2 d0 d1 is (d0,d1)
(assert (! (forall ((d0 Int) (d1 Int) (i Int)) (! (= (dim (const_ones2 d0 d1) i) (ite (= i 0) d0 (ite (= i 1) d1 1))) :pattern ((dim (const_ones2 d0 d1) i)))) :named dim_const_ones2))
;; const_ones4 d0 d1 d2 d3 is (d0,d1,d2,d3)
(assert (! (forall ((d0 Int) (d1 Int) (d2 Int) (d3 Int) (i Int)) (! (= (dim (const_ones4 d0 d1 d2 d3) i) (ite (= i 0) d0 (ite (= i 1) d1 (ite (= i 2) d2 d3)))) :pattern ((dim (const_ones4 d0 d1 d2 d3) i)))) :named dim_const_ones4))
