// bf16 x bf16 -> f32 multiplier (combinational).
//
// Contract: p is the IEEE-754 binary32 product of a and b widened to f32,
// rounded to nearest even with gradual underflow (subnormal inputs and results
// are kept, never flushed); overflow gives +-Inf. Exactly what `float * float`
// computes on the host for two bf16 values (mxu/mxu.cpp): in the normal range
// the 16-bit significand product is exact, below it the product rounds once.
// Inf x 0 and every NaN input give the quiet NaN 32'h7fc00000 (NaN payloads
// are not part of the MXU contract).
`timescale 1ns / 1ps

module bf16_mul (
    input  logic [15:0] a,
    input  logic [15:0] b,
    output logic [31:0] p
);
  localparam logic [31:0] QNAN = 32'h7fc0_0000;

  logic s;
  logic a_nan, b_nan, a_inf, b_inf, a_zero, b_zero;
  logic [7:0] ea, eb;        // exponents, subnormals counted as 1
  logic [15:0] prod;         // significand product, value = prod * 2^(ea + eb - 268)
  logic [4:0] msb;           // index of the leading one of prod
  logic signed [10:0] e;     // biased exponent of the normalised product
  logic signed [10:0] sh;    // subnormal result: field = prod * 2^sh, rounded
  logic [22:0] norm;         // prod below its leading one, as a mantissa
  logic [32:0] ext;          // prod >> -sh with 17 fraction bits
  logic round_up;

  always_comb begin
    s = a[15] ^ b[15];
    a_nan = a[14:7] == 8'hff && a[6:0] != 0;
    b_nan = b[14:7] == 8'hff && b[6:0] != 0;
    a_inf = a[14:7] == 8'hff && a[6:0] == 0;
    b_inf = b[14:7] == 8'hff && b[6:0] == 0;
    a_zero = a[14:0] == 0;
    b_zero = b[14:0] == 0;
    ea = a[14:7] == 0 ? 8'd1 : a[14:7];
    eb = b[14:7] == 0 ? 8'd1 : b[14:7];
    prod = {8'b0, a[14:7] != 0, a[6:0]} * {8'b0, b[14:7] != 0, b[6:0]};
    msb = 0;
    for (int i = 0; i < 16; i++) if (prod[i]) msb = 5'(i);
    e = 11'(ea) + 11'(eb) - 11'sd141 + 11'(msb);
    sh = 11'(ea) + 11'(eb) - 11'sd119;
    norm = 23'(24'(prod) << (5'd23 - msb));
    ext = {prod, 17'b0} >> (sh < -11'sd33 ? 6'd33 : 6'(-sh));
    round_up = ext[16] && (ext[15:0] != 0 || ext[17]);

    if (a_nan || b_nan || (a_inf && b_zero) || (b_inf && a_zero)) p = QNAN;
    else if (a_inf || b_inf) p = {s, 8'hff, 23'b0};
    else if (a_zero || b_zero) p = {s, 31'b0};
    else if (e >= 255) p = {s, 8'hff, 23'b0};
    else if (e >= 1) p = {s, e[7:0], norm};
    else if (sh >= 0) p = {s, 8'b0, 23'(prod) << sh[4:0]};
    else p = {s, 31'(ext[32:17]) + 31'(round_up)};
  end
endmodule
