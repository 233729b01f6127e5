// Host <-> device layouts of kernel operands, as the TPU compiler lays them
// out (shared/llo/README.md "Memory, addresses and layouts"):
//  * f32/s32/u32 2-D: (8,128) tiles of 4 KiB, row-major over the tile grid,
//    padded with zeros to whole tiles; element (r, c) of a tile at word r*128+c.
//  * bf16 2-D: (8,128)(2,1) tiles of 2 KiB: 32-bit word (r/2, c) holds rows r
//    and r+1 of column c, the even row in the low 16 bits.
//  * f8 (float8_e4m3fn) 2-D: (8,128)(4,1) tiles of 1 KiB: word (r/4, c) holds
//    four rows, row r%4 in byte r%4.
//  * 1-D arrays: viewed as [ceil(n/128), 128] and tiled as above (layouts
//    T(1024), T(1024)(128)(2,1), T(1024)(128)(4,1)): element i is (i/128, i%128).
// Host arrays are .npy files: f32 as float32; bf16 as uint16 bit patterns or
// float32 values (rounded to nearest even); f8 as uint8 codes or float32.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "chip/exec_program.hpp"
#include "common/npy.hpp"

namespace tpuemu::chip {

// Alignment of every operand buffer (and of the VMEM area after the
// program's own allocations) that a run places for the host.
inline constexpr std::uint64_t kOperandAlign = 4096;

// Bytes the operand occupies on the device.
std::uint64_t device_bytes(const OperandBinding& binding);

// Checks dtype and shape against the binding and converts; throws
// std::invalid_argument with a message naming the operand on a mismatch.
// Large arrays convert on the host threads (common/host_pool.hpp) unless
// `host_threads` is false (timing-only runs leave the pool alone); the bytes
// are the same either way.
// `host` may be any view (an NpyArray converts to one; a mapped file:
// common/npy_file.hpp).
std::vector<std::uint8_t> to_device(const OperandBinding& binding, const NpyView& host, const std::string& origin,
                                    bool host_threads = true);

// The npy dtype from_device gives `binding` (its shape is binding.shape);
// throws std::invalid_argument for a dtype the host cannot hold.
NpyDtype host_dtype(const OperandBinding& binding, bool raw_bits);

// Converts device bytes back; bf16/f8 come back as float32 values unless
// `raw_bits` (then uint16 / uint8 codes). Host threads as for to_device.
NpyArray from_device(const OperandBinding& binding, const std::vector<std::uint8_t>& device, bool raw_bits,
                     bool host_threads = true);

// The same conversion a piece at a time, for outputs written or compared
// without a whole host array. The host array's bytes are row-major, so rows
// first_row..end_row-1 of the tiled 2-D view (a 1-D array's view rows hold
// 128 elements each; end_row is clamped to view_rows) are one contiguous run
// of them: from_device_rows writes exactly that run into `out`, which must be
// its size, the same bytes as the same part of from_device's array. Contract:
// first_row is a multiple of 8 (a tile row) and `device` is the operand's
// whole device image; otherwise std::invalid_argument. Large pieces convert
// on the host threads.
std::uint64_t view_rows(const OperandBinding& binding);
// A multiple of 8 view rows whose host bytes are at most `piece_bytes` (at
// least 8 rows: one tile row).
std::uint64_t host_rows_per_piece(const OperandBinding& binding, bool raw_bits, std::uint64_t piece_bytes);
// The size of that run of host bytes for rows first_row..end_row-1.
std::uint64_t host_bytes_of_rows(const OperandBinding& binding, bool raw_bits, std::uint64_t first_row,
                                 std::uint64_t end_row);
void from_device_rows(const OperandBinding& binding, std::span<const std::uint8_t> device, bool raw_bits,
                      std::uint64_t first_row, std::uint64_t end_row, std::span<std::uint8_t> out);

// The register value of a by-value operand (`inlined_call_operand.<no memory
// space>`, e.g. f32[]) taken from a host array of one element (shape (),
// (1,), ...): the element converted to the operand's dtype, laid out as
// to_device lays out a scalar (f32/s32/u32 the 32-bit pattern, bf16 in the
// low 16 bits, f8e4m3fn in the low byte). `element` names what the array
// holds where its npy dtype does not say: "bfloat16" for uint16 bit
// patterns, "float8_e4m3fn" for uint8 codes; otherwise (empty, or another
// name) the npy dtype does (float32/float64 values, integers, bool as 0/1).
// Contract: the value converts exactly or not at all: floats to an integer
// dtype must be whole and in range, integers to a float dtype representable,
// floats to a narrower float representable; NaN converts between float types
// (sign kept), an infinity to f32 and bf16. Otherwise throws
// std::invalid_argument: "<origin>: <value> (<dtype>, shape <shape>) ...",
// naming the operand's dtype and why.
std::uint32_t scalar_register(const OperandBinding& binding, const NpyArray& host, std::string_view element,
                              const std::string& origin);

// A 2-D array stored transposed (layout {0,1}): the host array with its axes
// swapped, and the binding describing that stored shape.
NpyArray transpose_2d(const NpyView& a);
OperandBinding transposed_binding(OperandBinding b);

}  // namespace tpuemu::chip
