/*
 * emu_half.h
 *	  Software IEEE half and bfloat16 conversions for the host emulation of
 *	  tests/gpu/emu/ (what __float2half_rn, __float2bfloat16_rn and their
 *	  inverses do on the GPU): float to 16 bits rounds to nearest, ties to
 *	  even; a half overflows to +-inf; NaN stays NaN.  16 bits to float is
 *	  exact.  The bits are those of the device formats (uint16_t).
 */
#ifndef EMU_HALF_H
#define EMU_HALF_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* f rounded to the nearest IEEE half, as its bits. */
static inline uint16_t
emu_f32_to_f16(float f)
{
	uint32_t	x,
				absx,
				e,
				m,
				q,
				rem,
				halfway;
	uint16_t	sign;
	int			shift;

	memcpy(&x, &f, 4);
	sign = (uint16_t) ((x >> 16) & 0x8000);
	absx = x & 0x7fffffff;
	if (absx > 0x7f800000)
		return sign | 0x7e00;	/* NaN */
	if (absx >= 0x477ff000)
		return sign | 0x7c00;	/* >= 65520 (and inf): inf */
	e = absx >> 23;
	if (e < 113)
	{
		/* a half subnormal: units of 2^-24 */
		if (e < 102)
			return sign;
		m = (absx & 0x7fffff) | 0x800000;
		shift = 126 - (int) e;
		q = m >> shift;
		rem = m & ((1u << shift) - 1);
		halfway = 1u << (shift - 1);
		if (rem > halfway || (rem == halfway && (q & 1)))
			q++;
		return sign | (uint16_t) q;
	}
	q = ((e - 112) << 10) | ((absx & 0x7fffff) >> 13);
	rem = absx & 0x1fff;
	if (rem > 0x1000 || (rem == 0x1000 && (q & 1)))
		q++;					/* a carry into the exponent is right */
	return sign | (uint16_t) q;
}

/* The float value of half bits h. */
static inline float
emu_f16_to_f32(uint16_t h)
{
	uint32_t	sign = (uint32_t) (h & 0x8000) << 16,
				e = (h >> 10) & 0x1f,
				m = h & 0x3ff,
				x;
	float		f;

	if (e == 0)
	{
		f = ldexpf((float) m, -24);
		return sign ? -f : f;
	}
	if (e == 31)
		x = sign | 0x7f800000 | (m << 13);
	else
		x = sign | ((e + 112) << 23) | (m << 13);
	memcpy(&f, &x, 4);
	return f;
}

/* f rounded to the nearest bfloat16, as its bits. */
static inline uint16_t
emu_f32_to_bf16(float f)
{
	uint32_t	x;

	memcpy(&x, &f, 4);
	if ((x & 0x7fffffff) > 0x7f800000)
		return (uint16_t) ((x >> 16) | 0x40);	/* NaN stays NaN */
	x += 0x7fff + ((x >> 16) & 1);
	return (uint16_t) (x >> 16);
}

/* The float value of bfloat16 bits b. */
static inline float
emu_bf16_to_f32(uint16_t b)
{
	uint32_t	x = (uint32_t) b << 16;
	float		f;

	memcpy(&f, &x, 4);
	return f;
}

#endif							/* EMU_HALF_H */
