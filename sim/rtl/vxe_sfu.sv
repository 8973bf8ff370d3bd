// The VXE's special-function pipeline: LANES lanes of e^x (FUNC 0) or a / b (FUNC 1), each an
// iterative core behind fixed stages. Ground truth for the VXE's closed form
// (sim/model/vxe.cpp: latency + ceil(elements / lanes) * ii, with vxe.ops' exp and div timings).
//
// Arithmetic (a fixed-point stand-in for the FP16/FP32 unit; the C++ reference is
// sim/rtl/vxe_sfu_ref.h, bit for bit):
//   * exp: x is Q5.10 (int16, [-32, 32)); t = x * log2(e) (log2(e) in Q1.30), e = floor(t),
//     f = frac(t) in Q0.16; 2^f by a degree-4 polynomial in Horner form (coefficients in Q2.30,
//     least-squares fit of 2^f on [0, 1), relative error 5e-6); the result is a pseudo-float
//     {e[7:0], m[15:0]}: e^x = m / 2^15 * 2^e, m in [2^15, 2^16).
//   * div: a, b int16; y = trunc(a * 2^16 / b) by restoring division of |a| * 2^16 by |b|
//     (32 quotient bits), signed and saturated to int32; b = 0 gives INT32_MAX (a >= 0) or
//     INT32_MIN. A reciprocal is a division with a = 1.0 in the caller's format.
//
// Timing contract (what the closed form assumes):
//   * one beat = LANES operands, accepted on a rising edge when in_valid && in_ready. The core
//     takes a beat every II cycles: in_ready is low for II - 1 cycles after an accepted beat;
//   * LAT + II - 1 register stages from an accepted beat to the delivered result: PRE = 2 fixed
//     stages in front (exp: the multiply by log2(e), then the split into e and f; div: operand
//     magnitudes, then a copy for the core), II iterations of the core (exp: 4 Horner steps,
//     div: 32 quotient bits, 4 / II or 32 / II of them a cycle), LAT - 3 stages behind it (the
//     packing / sign and saturation, retiming, the output register). LAT counts the cycle in
//     which the beat enters, as the MAC tree's DEPTH does: a lone beat's result is taken
//     LAT + II cycles after it may enter, and G beats back to back G * II + LAT cycles after.
//
// Handshake: a global-stall pipeline like the MAC tree's. When the output register holds a
// result the consumer has not taken (out_valid && !out_ready) every stage holds and in_ready
// drops.
module vxe_sfu #(
    parameter int FUNC  = 0,    // 0 = exp, 1 = div
    parameter int LANES = 128,
    parameter int LAT   = 16,   // the entry cycle, PRE stages in front and LAT - 3 behind the core, >= 4
    parameter int II    = 4     // core cycles per beat: divides 4 (exp) or 32 (div)
) (
    input  logic                  clk,
    input  logic                  rst,       // synchronous, active high
    input  logic [LANES*16-1:0]   in_a,      // lane i in bits [i*16 +: 16]
    input  logic [LANES*16-1:0]   in_b,      // div only: the divisors
    input  logic                  in_valid,
    output logic                  in_ready,
    output logic [LANES*32-1:0]   out_y,     // lane i in bits [i*32 +: 32]
    output logic                  out_valid,
    input  logic                  out_ready
);
  localparam int PRE = 2;
  localparam int POST = LAT - PRE - 1;           // behind the core, the output register included
  localparam int STEPS = FUNC == 0 ? 4 : 32;     // Horner steps / quotient bits
  localparam int PER_CYCLE = STEPS / II;
  localparam int KW = II > 1 ? $clog2(II) : 1;
  localparam logic [31:0] LOG2E_Q30 = 32'd1549082005;
  localparam logic [31:0] C0 = 32'd1073747468, C1 = 32'd744075473, C2 = 32'd259318101,
                          C3 = 32'd55823407, C4 = 32'd14507911;

  generate
    if (FUNC != 0 && FUNC != 1) begin : bad_func
      $error("vxe_sfu: FUNC=%0d is neither 0 (exp) nor 1 (div)", FUNC);
    end
    if (II < 1 || STEPS % II != 0) begin : bad_ii
      $error("vxe_sfu: II=%0d does not divide the core's %0d steps", II, STEPS);
    end
    if (LAT < PRE + 2) begin : bad_lat
      $error("vxe_sfu: LAT=%0d < %0d", LAT, PRE + 2);
    end
  endgenerate

  logic stall, accept;
  assign stall = out_valid && !out_ready;

  // ---- issue spacing: a beat every II cycles ---------------------------------------------
  logic [KW-1:0] gap;  // cycles until the core can take the next beat
  assign in_ready = !stall && gap == '0;
  assign accept = in_valid && in_ready;
  always_ff @(posedge clk) begin
    if (rst) gap <= '0;
    else if (!stall) begin
      if (accept) gap <= KW'(II - 1);
      else if (gap != '0) gap <= gap - 1'b1;
    end
  end

  // ---- control: valid bits of the front stages, the core's counter, the back stages -------
  logic p1_v, p2_v, busy, core_done;
  logic [KW-1:0] k;  // core iterations left after this cycle's
  logic post_v [POST];
  assign core_done = busy && k == '0;
  always_ff @(posedge clk) begin
    if (rst) begin
      p1_v <= 1'b0;
      p2_v <= 1'b0;
      busy <= 1'b0;
      k    <= '0;
      for (int s = 0; s < POST; s++) post_v[s] <= 1'b0;
    end else if (!stall) begin
      p1_v <= accept;
      p2_v <= p1_v;
      if (p2_v) begin
        busy <= 1'b1;
        k    <= KW'(II - 1);
      end else if (busy && k != '0) k <= k - 1'b1;
      else busy <= 1'b0;
      post_v[0] <= core_done;
      for (int s = 1; s < POST; s++) post_v[s] <= post_v[s-1];
    end
  end
  assign out_valid = post_v[POST-1];

  // ---- datapath, lane by lane --------------------------------------------------------------
  // The core loads on the edge that ends a cycle with p2_v (the first iteration, from the
  // front stages) and on the II - 1 edges after it (k counting down); y_q[0] takes the result
  // on the edge after the last iteration (core_done), when the next beat may already enter.
  genvar ln;
  generate
    for (ln = 0; ln < LANES; ln++) begin : lane
      logic [31:0] y_q [POST];  // back stages: y_q[0] the formatted result, the last is out_y
      logic [31:0] y_d;
      logic        iterate;
      assign iterate = p2_v || (busy && k != '0);
      if (FUNC == 0) begin : expf
        logic signed [15:0] x;
        logic signed [47:0] t;            // p1: x * log2(e), Q.40
        logic        [7:0]  e2, e_c;      // p2 / core: floor(t)
        logic        [15:0] f2, f_c, f_in;
        logic        [32:0] p, p_in, p_out;  // Horner accumulator, Q2.30
        logic        [1:0]  first_step;   // Horner steps done before this cycle
        logic        [17:0] m_full;
        assign x = in_a[ln*16 +: 16];
        assign f_in = p2_v ? f2 : f_c;
        assign p_in = p2_v ? 33'(C4) : p;
        assign first_step = p2_v ? 2'd0 : 2'((II - int'(k)) * PER_CYCLE);
        // PER_CYCLE steps p = p * f + c of this cycle, c = C3, C2, C1, C0 for steps 0..3.
        always_comb begin
          p_out = p_in;
          for (int j = 0; j < PER_CYCLE; j++) begin
            logic [48:0] prod;
            logic [31:0] c;
            case (int'(first_step) + j)
              0: c = C3;
              1: c = C2;
              2: c = C1;
              default: c = C0;
            endcase
            prod  = 49'(p_out) * 49'(f_in);
            p_out = 33'(prod >> 16) + 33'(c);
          end
        end
        always_ff @(posedge clk) begin
          if (!stall) begin
            t  <= 48'(x) * 48'(LOG2E_Q30);
            e2 <= t[47:40];
            f2 <= t[39:24];
            if (p2_v) begin
              f_c <= f2;
              e_c <= e2;
            end
            if (iterate) p <= p_out;
          end
        end
        // Back stage 0: m = p / 2^15 clamped to 16 bits, packed with e.
        assign m_full = p[32:15];
        assign y_d = {8'd0, e_c, m_full > 18'hFFFF ? 16'hFFFF : m_full[15:0]};
        logic unused;
        assign unused = ^{t[23:0], p[14:0], in_b[ln*16 +: 16]};  // in_b: div only
      end else begin : divf
        logic signed [15:0] a, b;
        logic        [15:0] abs_a1, abs_b1, abs_a2, abs_b2, d;
        logic               neg1, zero1, aneg1, neg2, zero2, aneg2, neg, zero, aneg;
        logic        [31:0] num, quo, num_in, quo_in, num_out, quo_out;
        logic        [16:0] rem, rem_in, rem_out;
        logic        [15:0] d_in;
        assign a = in_a[ln*16 +: 16];
        assign b = in_b[ln*16 +: 16];
        assign num_in = p2_v ? {abs_a2, 16'd0} : num;
        assign quo_in = p2_v ? 32'd0 : quo;
        assign rem_in = p2_v ? 17'd0 : rem;
        assign d_in   = p2_v ? abs_b2 : d;
        // PER_CYCLE restoring steps: shift the next numerator bit into the remainder, subtract
        // the divisor where it fits, that quotient bit 1.
        always_comb begin
          num_out = num_in;
          quo_out = quo_in;
          rem_out = rem_in;
          for (int j = 0; j < PER_CYCLE; j++) begin
            logic [16:0] r2;
            r2 = {rem_out[15:0], num_out[31]};
            num_out = num_out << 1;
            if (r2 >= {1'b0, d_in}) begin
              rem_out = r2 - {1'b0, d_in};
              quo_out = {quo_out[30:0], 1'b1};
            end else begin
              rem_out = r2;
              quo_out = {quo_out[30:0], 1'b0};
            end
          end
        end
        always_ff @(posedge clk) begin
          if (!stall) begin
            abs_a1 <= a[15] ? 16'(-a) : a;  // -(-32768) wraps to 0x8000: 32768 unsigned
            abs_b1 <= b[15] ? 16'(-b) : b;
            neg1   <= a[15] ^ b[15];
            aneg1  <= a[15];
            zero1  <= b == 16'sd0;
            abs_a2 <= abs_a1;
            abs_b2 <= abs_b1;
            neg2   <= neg1;
            zero2  <= zero1;
            aneg2  <= aneg1;
            if (p2_v) begin
              d    <= abs_b2;
              neg  <= neg2;
              zero <= zero2;
              aneg <= aneg2;
            end
            if (iterate) begin
              num <= num_out;
              quo <= quo_out;
              rem <= rem_out;
            end
          end
        end
        assign y_d = zero ? (aneg ? 32'h8000_0000 : 32'h7FFF_FFFF)
                   : neg  ? 32'(-quo)
                   : quo[31] ? 32'h7FFF_FFFF : quo;
      end
      always_ff @(posedge clk) begin
        if (!stall) begin
          if (core_done) y_q[0] <= y_d;
          for (int s = 1; s < POST; s++) y_q[s] <= y_q[s-1];
        end
      end
      assign out_y[ln*32 +: 32] = y_q[POST-1];
    end
  endgenerate
endmodule
