// f32 + f32 adder (combinational).
//
// Contract: y is the IEEE-754 binary32 sum of a and b rounded to nearest even,
// with gradual underflow (subnormals kept, never flushed) and overflow to
// +-Inf; an exact zero sum is +0 unless both operands are -0. Exactly what
// `float + float` computes on the host (mxu/mxu.cpp). Inf + -Inf and every NaN
// input give the quiet NaN 32'h7fc00000 (NaN payloads are not part of the MXU
// contract).
//
// Datapath: the larger magnitude x and the smaller y are aligned on 24-bit
// significands with guard, round and sticky bits; after the add or subtract
// one right shift (carry) or a left shift bounded by the exponent (so that
// tiny results stay subnormal) normalises, then the {exponent, mantissa} field
// is incremented to round, which carries into the exponent (and into Inf) by
// itself.
`timescale 1ns / 1ps

module f32_add (
    input  logic [31:0] a,
    input  logic [31:0] b,
    output logic [31:0] y
);
  localparam logic [31:0] QNAN = 32'h7fc0_0000;

  logic a_nan, b_nan, a_inf, b_inf;
  logic [31:0] x, z;          // |x| >= |z|
  logic [7:0] ex, ez;         // exponents, subnormals counted as 1
  logic [7:0] d;              // ex - ez
  logic [52:0] zw;            // z's significand and 2 bits, shifted right by d, 27 bits below
  logic [27:0] xs, zs;        // {carry, significand(24), guard, round, sticky}
  logic [27:0] sum;
  logic [4:0] lz;             // leading zeros of sum[26:0]
  logic [7:0] shift;
  logic [26:0] t;             // normalised: hidden bit 26, mantissa 25:3, G R S 2:0
  logic [8:0] e;              // result exponent (before rounding)
  logic [30:0] field;

  function automatic logic [4:0] leading_zeros(input logic [26:0] v);
    leading_zeros = 5'd27;
    for (int i = 0; i < 27; i++) if (v[i]) leading_zeros = 5'(26 - i);
  endfunction

  always_comb begin
    a_nan = a[30:23] == 8'hff && a[22:0] != 0;
    b_nan = b[30:23] == 8'hff && b[22:0] != 0;
    a_inf = a[30:23] == 8'hff && a[22:0] == 0;
    b_inf = b[30:23] == 8'hff && b[22:0] == 0;

    // 1. Order by magnitude and align.
    {x, z} = b[30:0] > a[30:0] ? {b, a} : {a, b};
    ex = x[30:23] == 0 ? 8'd1 : x[30:23];
    ez = z[30:23] == 0 ? 8'd1 : z[30:23];
    d = ex - ez;
    zw = {z[30:23] != 0, z[22:0], 2'b00, 27'b0} >> (d > 8'd27 ? 8'd27 : d);
    xs = {1'b0, x[30:23] != 0, x[22:0], 3'b000};
    zs = {1'b0, zw[52:27], zw[26:0] != 0};

    // 2. Add or subtract the significands (x >= z, so no borrow).
    sum = x[31] ^ z[31] ? xs - zs : xs + zs;

    // 3. Normalise.
    lz = leading_zeros(sum[26:0]);
    shift = 8'(lz) < ex - 8'd1 ? 8'(lz) : ex - 8'd1;
    if (sum[27]) begin
      t = {sum[27:2], sum[1] | sum[0]};
      e = 9'(ex) + 9'd1;
    end else begin
      t = sum[26:0] << shift;
      e = t[26] ? 9'(ex) - 9'(shift) : 9'd0;
    end

    // 4. Round to nearest even by incrementing {exponent, mantissa}.
    field = {e[7:0], t[25:3]} + 31'(t[2] && (t[1] || t[0] || t[3]));

    if (a_nan || b_nan || (a_inf && b_inf && a[31] != b[31])) y = QNAN;
    else if (a_inf) y = a;
    else if (b_inf) y = b;
    else if (sum == 0) y = {a[31] & b[31], 31'b0};
    else if (e >= 9'd255) y = {x[31], 8'hff, 23'b0};
    else y = {x[31], field};
  end
endmodule
